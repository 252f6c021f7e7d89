package controller

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Event pacing: events are best effort. Deleting 20,000 leaked leases must neither hold 20,000
// events in memory nor flood the API server with them, so events pass through a bounded queue
// drained at a fixed rate; what does not fit is dropped and counted (logs and metrics remain
// complete).
const (
	eventQueueLength = 1000
	eventQPS         = 10
	eventBurst       = 25
)

// eventEmitter records events.k8s.io/v1 Events about leases through a bounded, paced queue.
type eventEmitter struct {
	recorder events.EventRecorder
	queue    chan func()
	limiter  flowcontrol.RateLimiter
	dropped  prometheus.Counter
}

func newEventEmitter(recorder events.EventRecorder, dropped prometheus.Counter) *eventEmitter {
	return &eventEmitter{
		recorder: recorder,
		queue:    make(chan func(), eventQueueLength),
		limiter:  flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst),
		dropped:  dropped,
	}
}

// run hands queued events to the recorder, paced, until ctx ends.
func (e *eventEmitter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-e.queue:
			if err := e.limiter.Wait(ctx); err != nil {
				return
			}
			f()
		}
	}
}

// emit queues an event about obj; action is what nodekeeper did (Delete, Adopt, Report, ...).
func (e *eventEmitter) emit(obj runtime.Object, eventType, reason, action, note string, args ...any) {
	msg := fmt.Sprintf(note, args...)
	msg = textsafe.ClipBytes(msg, 1000) // the API rejects notes over 1 kB; cut on a character boundary
	select {
	case e.queue <- func() { e.recorder.Eventf(obj, nil, eventType, reason, action, "%s", msg) }:
	default:
		e.dropped.Inc()
	}
}
