package controller

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
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
	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder
	queue       chan func()
	limiter     flowcontrol.RateLimiter
	dropped     prometheus.Counter
}

func newEventEmitter(client kubernetes.Interface, dropped prometheus.Counter) *eventEmitter {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	return &eventEmitter{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, eventComponentSource),
		queue:       make(chan func(), eventQueueLength),
		limiter:     flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst),
		dropped:     dropped,
	}
}

// run sends queued events until ctx ends, then shuts the broadcaster down.
func (e *eventEmitter) run(ctx context.Context) {
	if err := e.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return
	}
	defer e.broadcaster.Shutdown()
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
