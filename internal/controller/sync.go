package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// This file is the controller's work: the queue, the workers, and the decision for one lease.

// firstPassSlice is how many keys of the first pass are queued at a time.
const firstPassSlice = 1000

// lead runs one term of work: a fresh queue holding every cached lease, and the workers, until
// ctx ends. Then it shuts the queue down and waits for the workers to finish their item.
func (c *Controller) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if ctx.Err() != nil {
		return // a term that ended before it began (lost or shut down at once)
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "leases", Clock: c.clock})
	c.queue.Store(&q)
	c.leading.Store(true)
	c.metrics.leader.Set(1)
	var wg sync.WaitGroup
	for i := 0; i < c.opts.Workers; i++ {
		wg.Go(func() { c.work(ctx, q) })
	}
	keys := c.deps.Leases.GetIndexer().ListKeys()
	logger.Info("Started processing leases", "leases", len(keys), "workers", c.opts.Workers)
	// Feed the first pass in slices: the queue's sets and slice never shrink, so queueing 50,000
	// keys at once would keep room for 50,000 for the life of the process. The feeder waits for
	// the workers' progress, not for a timer, so it runs as fast as they do whatever the clock.
	for i, k := range keys {
		if _, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
			q.Add(name)
		}
		if (i+1)%firstPassSlice == 0 {
			for q.Len() > firstPassSlice/2 && ctx.Err() == nil {
				select {
				case <-c.progress:
				case <-ctx.Done():
				}
			}
		}
	}
	<-ctx.Done()
	c.queue.CompareAndSwap(&q, nil)
	q.ShutDown()
	wg.Wait()
	c.leading.Store(false)
	c.metrics.leader.Set(0)
	logger.Info("Stopped processing leases")
}

func (c *Controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	for {
		name, shutdown := q.Get()
		if shutdown {
			return
		}
		func() {
			defer q.Done(name)
			if ctx.Err() != nil {
				return
			}
			res, err := c.sync(ctx, name)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					q.AddRateLimited(name)
				}
			case res.retry:
				// A safety check saw newer data than the cache; the informer delivers it, and
				// this backstop re-classifies even if that event was missed.
				q.AddRateLimited(name)
			default:
				q.Forget(name)
				if res.after > 0 {
					q.AddAfter(name, res.after)
				}
			}
		}()
		select {
		case c.progress <- struct{}{}:
		default:
		}
	}
}

// result tells the worker what to do with a key after sync.
type result struct {
	after time.Duration // re-classify after this long (a time-driven class change)
	retry bool          // re-classify soon, rate-limited
}

// action is what the controller does about a lease of one class, and how it reports each
// outcome. The classes with an action are in actions; every other class is only counted (and
// zombie leases reported, see reportZombie).
type action struct {
	// waitUntil, when set, is the moment before which the lease is left alone.
	waitUntil func(c *Controller, l *coordinationv1.Lease) time.Time
	waitLog   string
	// do sends the action through the deleter (live Node GET, preconditions).
	do func(d *deleter.Deleter, ctx context.Context, l *coordinationv1.Lease, node *lease.NodeRef) deleter.Result
	outcomes
	words
	actionEvents
	// counter counts every attempt by result; doneResult is the result label of done.
	counter    func(m *metrics) *prometheus.CounterVec
	doneResult string
}

// actionEvents are the events.k8s.io Events of an action's success and its dry run: their reasons,
// and the note for an outcome.
type actionEvents struct {
	doneReason, dryRunReason string
	note                     func(r deleter.Result, dryRun bool) string
}

// outcomes sort the deleter's outcomes of an action: done and dryRun are the success and its dry
// run; stopped are the safety checks that re-classify the lease (retried, rate-limited); nothing
// are the outcomes that leave nothing to do.
type outcomes struct {
	done, dryRun     deleter.Outcome
	stopped, nothing []deleter.Outcome
}

// words name an action in its log lines and events: "delete", "Deleted", "a delete" and the
// object, "leaked lease".
type words struct {
	verb, past, attempt, object string
}

func (w words) doneLog() string    { return w.past + " " + w.object }
func (w words) dryRunLog() string  { return "Dry run: would " + w.verb + " " + w.object }
func (w words) stoppedLog() string { return "Safety check stopped " + w.attempt + "; re-classifying" }
func (w words) nothingLog() string { return "Nothing to " + w.verb }

// eventAction is the events.k8s.io action: "Delete".
func (w words) eventAction() string { return strings.ToUpper(w.verb[:1]) + w.verb[1:] }

// actions is the decision table: the one class that is deleted, and the one that is adopted.
var actions = map[lease.Class]*action{
	lease.Leaked: {
		do: (*deleter.Deleter).Delete,
		outcomes: outcomes{done: deleter.Deleted, dryRun: deleter.WouldDelete,
			stopped: []deleter.Outcome{deleter.NodeExists, deleter.PreconditionFailed}, nothing: []deleter.Outcome{deleter.Gone, deleter.NotLeaked}},
		words:   words{verb: "delete", past: "Deleted", attempt: "a delete", object: "leaked lease"},
		counter: func(m *metrics) *prometheus.CounterVec { return m.deletions }, doneResult: resultDeleted,
		actionEvents: actionEvents{doneReason: ReasonDeleted, dryRunReason: ReasonWouldDelete, note: func(r deleter.Result, dryRun bool) string {
			if dryRun {
				return "Dry run, not deleted: " + r.Verdict.Reason
			}
			return "Deleted leaked node lease: " + r.Verdict.Reason
		}},
	},
	lease.Unowned: {
		// A 1.29+ kubelet adds the ownerReference itself on its next renewal once its Node
		// exists; adopting a new lease earlier would only make the kubelet's update conflict.
		waitUntil: func(c *Controller, l *coordinationv1.Lease) time.Time {
			return l.CreationTimestamp.Add(c.opts.AdoptAfter)
		},
		waitLog: "Unowned lease is new; leaving it to its kubelet for now",
		do:      (*deleter.Deleter).Adopt,
		outcomes: outcomes{done: deleter.Adopted, dryRun: deleter.WouldAdopt,
			stopped: []deleter.Outcome{deleter.NodeMissing, deleter.PreconditionFailed}, nothing: []deleter.Outcome{deleter.Gone, deleter.NotUnowned}},
		words:   words{verb: "adopt", past: "Adopted", attempt: "an adoption", object: "unowned lease"},
		counter: func(m *metrics) *prometheus.CounterVec { return m.adoptions }, doneResult: resultAdopted,
		// The deleter's reason says what was (or would be) adopted, and from which Node.
		actionEvents: actionEvents{doneReason: ReasonAdopted, dryRunReason: ReasonWouldAdopt, note: func(r deleter.Result, _ bool) string { return r.Reason }},
	},
}

func (c *Controller) sync(ctx context.Context, name string) (result, error) {
	start := time.Now()
	l, err := c.cachedLease(name)
	if err != nil {
		return result{}, err
	}
	if l == nil {
		c.dropState(name)
		return result{}, nil
	}
	node := c.nodeRef(name)
	now := c.clock.Now()
	// Most events are healthy renewals: classify without formatting a reason, and format it
	// only for a log line that is enabled or an action.
	v := lease.ClassOf(l, node, now, c.classify)
	explain := func() string { return lease.Classify(l, node, now, c.classify).Reason }
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(l.Namespace, l.Name), "class", v.Class)
	st := c.noteClass(logger, l, v.Class, explain)
	defer func() { c.metrics.decisions.Observe(time.Since(start).Seconds()) }()

	if a := actions[v.Class]; a != nil {
		return c.act(ctx, logger, a, l, node, now, explain)
	}
	if v.Class == lease.Zombie {
		return c.reportZombie(logger, l, v, st, now, explain), nil
	}
	return result{after: until(now, v.RecheckAt)}, nil
}

func until(now, at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	if d := at.Sub(now); d > 0 {
		return d
	}
	return time.Nanosecond // due now: requeue at once rather than forget it
}

// act takes a's action on l, once its wait is over, and reports the outcome.
func (c *Controller) act(ctx context.Context, logger klog.Logger, a *action, l *coordinationv1.Lease, node *lease.NodeRef, now time.Time, explain func() string) (result, error) {
	if a.waitUntil != nil {
		if at := a.waitUntil(c, l); now.Before(at) {
			if logger.V(2).Enabled() {
				logger.V(2).Info(a.waitLog, "until", at, "reason", explain())
			}
			return result{after: until(now, at)}, nil
		}
	}
	if c.opts.DryRun && c.dryRunReported(l) {
		return result{}, nil // this version was already reported
	}
	if c.beforeAction != nil {
		c.beforeAction(l)
	}
	r := a.do(c.deleter, ctx, l, node)
	c.decided(l, r)
	kv := []any{"outcome", r.Outcome, "reason", r.Reason, "uid", l.UID, "resourceVersion", l.ResourceVersion}
	counter := a.counter(c.metrics)
	switch {
	case r.Outcome == a.done:
		logger.Info(a.doneLog(), kv...)
		counter.WithLabelValues(a.doneResult).Inc()
		c.events.emit(l, corev1.EventTypeNormal, a.doneReason, a.eventAction(), "%s", a.note(r, false))
	case r.Outcome == a.dryRun:
		logger.Info(a.dryRunLog(), kv...)
		counter.WithLabelValues(resultDryRun).Inc()
		c.events.emit(l, corev1.EventTypeNormal, a.dryRunReason, a.eventAction(), "%s", a.note(r, true))
		c.setDryRunRV(l)
	case slices.Contains(a.stopped, r.Outcome):
		logger.Info(a.stoppedLog(), kv...)
		counter.WithLabelValues(resultPrecondition).Inc()
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
		return result{retry: true}, nil
	case slices.Contains(a.nothing, r.Outcome):
		logger.V(2).Info(a.nothingLog(), kv...)
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
	case r.Outcome == deleter.Failed:
		counter.WithLabelValues(resultError).Inc()
		return c.failed(logger, l, r)
	default:
		// An outcome the table does not know is a programming error; never act on it silently.
		c.metrics.errors.WithLabelValues("unexpected_outcome").Inc()
		return result{}, fmt.Errorf("lease %s: unexpected outcome %q of %s", l.Name, r.Outcome, a.eventAction())
	}
	return result{}, nil
}

// reportZombie reports a kubelet that renews its lease without a Node, once per lease, and
// requeues the lease for the moment it would become leaked. It never deletes anything: a live
// kubelet would re-create the lease at once (before 1.29) or keep polling for it (1.29+).
func (c *Controller) reportZombie(logger klog.Logger, l *coordinationv1.Lease, v lease.Verdict, st leaseState, now time.Time, explain func() string) result {
	after := until(now, v.RecheckAt)
	if st&zombieReported != 0 || v.Expired {
		// Expired: the kubelet has stopped; the lease is merely waiting out its grace period.
		return result{after: after}
	}
	if reportAt := l.CreationTimestamp.Add(c.opts.ZombieReportAfter); now.Before(reportAt) {
		// Likely a kubelet that has created its lease and is about to register its Node.
		return result{after: min(after, until(now, reportAt))}
	}
	c.mu.Lock()
	if s, ok := c.state[l.Name]; ok {
		c.state[l.Name] = s | zombieReported
	}
	c.mu.Unlock()
	logger.Info("Zombie kubelet: lease renewed without a Node; not deleting it while it is renewed",
		"reason", explain(), "renewAge", v.RenewAge.Round(time.Second), "leakedAt", v.RecheckAt)
	c.metrics.zombies.Inc()
	c.events.emit(l, corev1.EventTypeWarning, ReasonZombie, "Report",
		"Kubelet %s renews its lease but its Node does not exist (renewed %s ago); the lease is kept while it is renewed and deleted after %s without renewal",
		l.Name, v.RenewAge.Round(time.Second), c.effectiveGrace())
	return result{after: after}
}

func (c *Controller) failed(logger klog.Logger, l *coordinationv1.Lease, r deleter.Result) (result, error) {
	reason := errorReason(r.Err)
	c.metrics.errors.WithLabelValues(reason).Inc()
	msg := r.Reason
	if apierrors.IsForbidden(r.Err) {
		msg = fmt.Sprintf("%s; the controller's RBAC lacks this permission (see deploy/kustomize/base/rbac.yaml)", r.Reason)
	}
	logger.Error(r.Err, "Lease action failed; will retry with backoff", "step", r.Step, "errorReason", reason, "reason", msg)
	if reason != "Canceled" {
		c.events.emit(l, corev1.EventTypeWarning, ReasonActionFailed, r.Step, "%s", msg)
	}
	return result{}, r.Err
}

func (c *Controller) decided(l *coordinationv1.Lease, r deleter.Result) {
	for i := 0; i < r.Requests; i++ {
		if i == 0 {
			c.metrics.apiReads.Inc()
		} else {
			c.metrics.apiWrites.Inc()
		}
	}
	if c.opts.OnDecision != nil {
		c.opts.OnDecision(Decision{Lease: l.Name, UID: l.UID, RV: l.ResourceVersion, Class: r.Verdict.Class,
			Outcome: r.Outcome, Reason: r.Reason, At: c.clock.Now()})
	}
}

// leaseState is what the controller remembers about one lease between decisions, in one byte
// because there is one per cached lease: the lease's last class (its index in lease.Classes()
// plus one; 0 for not seen yet) and whether it was reported as a zombie. A deleted lease's state
// is dropped at once, so a lease re-created under the same name starts afresh.
type leaseState uint8

const zombieReported leaseState = 1 << 7

var classList = lease.Classes()

func (s leaseState) class() lease.Class {
	if i := int(s &^ zombieReported); i > 0 && i <= len(classList) {
		return classList[i-1]
	}
	return ""
}

func (s leaseState) withClass(c lease.Class) leaseState {
	for i, k := range classList {
		if k == c {
			return s&zombieReported | leaseState(i+1)
		}
	}
	return s & zombieReported
}

// noteClass records the lease's class and logs changes: class changes at V(1), first sight at
// V(3) (V(1) when action may follow), repeats at V(5). explain formats the reason, and is called
// only for a line that is logged. Returns the lease's state.
func (c *Controller) noteClass(logger klog.Logger, l *coordinationv1.Lease, class lease.Class, explain func() string) leaseState {
	c.mu.Lock()
	s := c.state[l.Name]
	prev := s.class()
	s = s.withClass(class)
	if class != lease.Zombie {
		s &^= zombieReported
	}
	c.state[l.Name] = s
	c.mu.Unlock()
	switch {
	case prev == "":
		lvl := 3
		if class != lease.Healthy {
			lvl = 1
		}
		if l := logger.V(lvl); l.Enabled() {
			l.Info("Classified lease", "reason", explain())
		}
	case prev != class:
		if l := logger.V(1); l.Enabled() {
			l.Info("Lease class changed", "from", prev, "reason", explain())
		}
	default:
		if l := logger.V(5); l.Enabled() {
			l.Info("Lease class unchanged", "reason", explain())
		}
	}
	return s
}

func (c *Controller) setDryRunRV(l *coordinationv1.Lease) {
	c.mu.Lock()
	c.dryRunRV[l.Name] = l.ResourceVersion
	c.mu.Unlock()
}

func (c *Controller) dryRunReported(l *coordinationv1.Lease) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	rv, ok := c.dryRunRV[l.Name]
	return ok && rv == l.ResourceVersion
}

func (c *Controller) dropState(name string) {
	c.mu.Lock()
	delete(c.state, name)
	delete(c.dryRunRV, name)
	c.mu.Unlock()
}
