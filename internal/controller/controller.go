// Package controller is `nodekeeper controller`: an in-cluster controller that keeps
// kube-node-lease clean without ever fighting a kubelet.
//
// It watches Leases in kube-node-lease (managedFields stripped) and Nodes as metadata only, and
// classifies every lease with package lease whenever the lease or its Node changes, and again at
// the exact moment its class would change by time alone (Verdict.RecheckAt): there is no periodic
// LIST or resync. Then:
//
//   - leaked leases are deleted through package deleter (live Node GET, UID+resourceVersion
//     preconditions; a failed precondition re-classifies, it is never retried blindly);
//   - unowned leases whose Node exists are adopted (the Node ownerReference is added) once they
//     have been left unowned for longer than a kubelet takes to set the reference itself, so the
//     upstream garbage collector removes them with their Node;
//   - zombie leases (a kubelet alive without its Node) are reported with a log line, a Warning
//     Event and a metric, and never deleted: the lease is only deleted after it has gone
//     unrenewed for the grace period, that is once it is leaked;
//   - every other class is only counted.
//
// Only the leader acts; other replicas keep warm caches and serve metrics. Leadership is held on a
// Lease in the controller's own namespace through a separate client, and a lost leadership (for
// example while the API server restarts) sends the replica back to candidacy without restarting
// the process.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Defaults for Options.
const (
	DefaultWorkers = 4
	// DefaultAdoptAfter leaves a new unowned lease to its kubelet for this long: a 1.29+ kubelet
	// adds the ownerReference itself on its next renewal (every 10 s) once its Node exists, and
	// adopting earlier would only make its update conflict.
	DefaultAdoptAfter = 30 * time.Second
	// DefaultZombieReportAfter keeps a kubelet that creates its lease just before registering its
	// Node (the normal start-up order) from being reported as a zombie.
	DefaultZombieReportAfter = time.Minute
)

// Event reasons, stable for alerting and `kubectl get events --field-selector reason=...`.
const (
	ReasonDeleted        = "LeakedLeaseDeleted"
	ReasonWouldDelete    = "LeakedLeaseDryRun"
	ReasonAdopted        = "LeaseAdopted"
	ReasonWouldAdopt     = "LeaseAdoptionDryRun"
	ReasonZombie         = "ZombieKubelet"
	ReasonActionFailed   = "LeaseActionFailed"
	eventComponentSource = "nodekeeper-controller"
)

// Options configure a Controller. Zero values mean the documented defaults.
type Options struct {
	// GracePeriod: an ownerless lease without a Node must go unrenewed this long to be leaked
	// (default lease.DefaultGracePeriod).
	GracePeriod time.Duration
	// DryRun: decide and report everything, send no DELETE and no PATCH.
	DryRun bool
	// Workers processing leases in parallel (default DefaultWorkers).
	Workers int
	// AdoptAfter: an unowned lease younger than this is left to its kubelet (default DefaultAdoptAfter).
	AdoptAfter time.Duration
	// ZombieReportAfter: a zombie lease younger than this is not reported yet (default DefaultZombieReportAfter).
	ZombieReportAfter time.Duration
	// LeaderElection configures leader election; when disabled this replica always acts.
	LeaderElection LeaderElectionOptions
	// Clock drives classification and requeues (default: the real clock). Tests inject a fake one.
	Clock clock.WithTicker
	// Registry receives the controller's metrics (default: a new registry, see Registry()).
	Registry *prometheus.Registry
	// OnDecision, when set, is called after every delete or adoption attempt (tests and audits).
	OnDecision func(Decision)

	// fullNodes caches whole Node objects instead of metadata only; it exists only so that the
	// memory benchmark can measure what metadata-only caching saves.
	fullNodes bool
}

// Decision describes one attempted action, for Options.OnDecision.
type Decision struct {
	Lease   string
	UID     types.UID
	RV      string
	Class   lease.Class
	Outcome deleter.Outcome
	Reason  string
	At      time.Time
}

// Controller is one replica of `nodekeeper controller`.
type Controller struct {
	opts      Options
	classify  lease.Options
	clock     clock.WithTicker
	leases    kubernetes.Interface
	metaNodes metadata.Interface
	leCfg     *rest.Config
	deleter   *deleter.Deleter
	metrics   *metrics

	leaseInformer cache.SharedIndexInformer
	nodeInformer  cache.SharedIndexInformer

	events   *eventEmitter // events.k8s.io Events about leases (paced, bounded)
	evClient kubernetes.Interface

	queue   atomic.Pointer[workqueue.TypedRateLimitingInterface[string]]
	synced  atomic.Bool
	leading atomic.Bool
	watch   *leaderelection.HealthzAdaptor

	mu       sync.Mutex
	state    map[string]leaseState // by lease name (the key shares the cached name's bytes)
	dryRunRV map[string]string     // dry run: the lease version whose decision was reported

	// beforeAction, set only by tests, runs between classification and a delete or adoption so
	// that races with kubelets and users can be staged at the worst moment.
	beforeAction func(*coordinationv1.Lease)
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

// New builds a controller. cfg is used for leases and Nodes (its QPS and Burst are the client
// rate limit); events get their own client and rate limit. Leader election uses
// opts.LeaderElection.Config, a separate client configuration, so that a burst of lease work
// never delays a leadership renewal.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	if cfg == nil {
		return nil, errors.New("controller: no client configuration")
	}
	c := &Controller{opts: opts, state: map[string]leaseState{}, dryRunRV: map[string]string{}}
	if c.opts.Workers == 0 {
		c.opts.Workers = DefaultWorkers
	}
	if c.opts.Workers < 0 {
		return nil, fmt.Errorf("workers must be positive, got %d", c.opts.Workers)
	}
	if c.opts.AdoptAfter == 0 {
		c.opts.AdoptAfter = DefaultAdoptAfter
	}
	if c.opts.ZombieReportAfter == 0 {
		c.opts.ZombieReportAfter = DefaultZombieReportAfter
	}
	if c.opts.AdoptAfter < 0 || c.opts.ZombieReportAfter < 0 || c.opts.GracePeriod < 0 {
		return nil, errors.New("grace period, adopt-after and zombie-report-after must not be negative")
	}
	c.classify = lease.Options{GracePeriod: opts.GracePeriod}
	c.clock = opts.Clock
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if err := c.opts.LeaderElection.complete(cfg); err != nil {
		return nil, err
	}
	if c.opts.LeaderElection.Enabled {
		// Created here, before any probe can read it; each election term registers its elector.
		c.watch = leaderelection.NewLeaderHealthzAdaptor(c.opts.LeaderElection.LeaseDuration)
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	c.metrics = newMetrics(reg, c)

	var err error
	if c.leases, err = kubernetes.NewForConfig(deleter.ProtobufConfig(cfg)); err != nil {
		return nil, err
	}
	if c.metaNodes, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.deleter, err = deleter.New(c.leases.CoordinationV1(), c.metaNodes, deleter.Options{
		Classify: c.classify, DryRun: opts.DryRun, Clock: c.clock,
	}); err != nil {
		return nil, err
	}

	// Events are best effort and must not eat the lease work's rate limit: own client, own limit.
	evCfg := rest.CopyConfig(cfg)
	evCfg.QPS, evCfg.Burst = 10, 25
	evClient, err := kubernetes.NewForConfig(evCfg)
	if err != nil {
		return nil, err
	}
	c.evClient = evClient
	c.events = newEventEmitter(evClient, c.metrics.eventsDropped)

	// Informers without the namespace index the factories add: one namespace (or none, for
	// Nodes) makes it a second copy of every key.
	noIndex := cache.Indexers{}
	c.leaseInformer = coordinationinformers.NewFilteredLeaseInformer(c.leases, lease.NodeLeaseNamespace, 0, noIndex, nil)
	nodeTransform := cache.TransformFunc(slimNode)
	if opts.fullNodes {
		full, err := kubernetes.NewForConfig(deleter.ProtobufConfig(cfg))
		if err != nil {
			return nil, err
		}
		c.nodeInformer = coreinformers.NewFilteredNodeInformer(full, 0, noIndex, nil)
		nodeTransform = stripManagedFields
	} else {
		c.nodeInformer = metadatainformer.NewFilteredMetadataInformer(c.metaNodes, deleter.NodesResource, "", 0, noIndex, nil).Informer()
	}
	if err := c.leaseInformer.SetTransform(compactLease); err != nil {
		return nil, err
	}
	if err := c.nodeInformer.SetTransform(nodeTransform); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{c.leaseInformer, c.nodeInformer} {
		if err := inf.SetWatchErrorHandlerWithContext(c.watchError); err != nil {
			return nil, err
		}
	}
	if _, err := c.leaseInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueObj(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueObj(obj) },
		DeleteFunc: func(obj any) { c.leaseDeleted(obj) },
	}); err != nil {
		return nil, err
	}
	// A Node's UID cannot change in an update, so only its arrival and departure matter.
	if _, err := c.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(obj) },
		DeleteFunc: func(obj any) { c.nodeChanged(obj) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Registry is where the controller's metrics are registered.
func (c *Controller) Registry() *prometheus.Registry { return c.metrics.registry }

// Synced reports whether the caches have synced (readiness).
func (c *Controller) Synced() bool { return c.synced.Load() }

// Leading reports whether this replica currently acts on leases.
func (c *Controller) Leading() bool { return c.leading.Load() }

// Run checks permissions, syncs the caches and then works (as leader, when leader election is
// enabled) until ctx is cancelled. On cancellation it stops the workers first and only then
// releases the leader lease, so no successor acts while this replica still does.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if err := c.preflight(ctx); err != nil {
		return err
	}
	evCtx, stopEvents := context.WithCancel(ctx)
	var evWG sync.WaitGroup
	evWG.Go(func() { c.events.run(evCtx) })
	defer evWG.Wait()
	defer stopEvents()
	infCtx, stopInformers := context.WithCancel(ctx)
	var infWG sync.WaitGroup
	defer infWG.Wait()
	defer stopInformers()
	for _, inf := range []cache.SharedIndexInformer{c.leaseInformer, c.nodeInformer} {
		infWG.Go(func() { inf.RunWithContext(infCtx) })
	}
	logger.Info("Waiting for caches to sync", "namespace", lease.NodeLeaseNamespace, "nodeCache", c.nodeCacheKind())
	if !cache.WaitForCacheSync(ctx.Done(), c.leaseInformer.HasSynced, c.nodeInformer.HasSynced) {
		return ctx.Err()
	}
	c.synced.Store(true)
	c.metrics.synced.Set(1)
	logger.Info("Caches synced", "leases", len(c.leaseInformer.GetIndexer().ListKeys()), "nodes", len(c.nodeInformer.GetIndexer().ListKeys()),
		"gracePeriod", c.effectiveGrace(), "dryRun", c.opts.DryRun, "workers", c.opts.Workers)
	if !c.opts.LeaderElection.Enabled {
		c.lead(ctx)
		return nil
	}
	return c.runElected(ctx)
}

func (c *Controller) effectiveGrace() time.Duration {
	if c.classify.GracePeriod == 0 {
		return lease.DefaultGracePeriod
	}
	return c.classify.GracePeriod
}

func (c *Controller) nodeCacheKind() string {
	if c.opts.fullNodes {
		return "full objects"
	}
	return "metadata only"
}

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
	keys := c.leaseInformer.GetIndexer().ListKeys()
	logger.Info("Started processing leases", "leases", len(keys), "workers", c.opts.Workers)
	// Feed the first pass in slices: the queue's sets and slice never shrink, so queueing 50,000
	// keys at once would keep room for 50,000 for the life of the process.
	for i, k := range keys {
		if _, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
			q.Add(name)
		}
		if (i+1)%firstPassSlice == 0 {
			for q.Len() > firstPassSlice/2 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
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
	}
}

// result tells the worker what to do with a key after sync.
type result struct {
	after time.Duration // re-classify after this long (a time-driven class change)
	retry bool          // re-classify soon, rate-limited
}

func (c *Controller) sync(ctx context.Context, name string) (result, error) {
	start := time.Now()
	obj, exists, err := c.leaseInformer.GetIndexer().GetByKey(lease.NodeLeaseNamespace + "/" + name)
	if err != nil {
		return result{}, err
	}
	if !exists {
		c.dropState(name)
		return result{}, nil
	}
	cl, ok := obj.(*cachedLease)
	if !ok {
		return result{}, fmt.Errorf("unexpected object %T in the lease cache", obj)
	}
	l := cl.lease(new(coordinationv1.Lease))
	node := c.nodeRef(name)
	now := c.clock.Now()
	// Most events are healthy renewals: classify without formatting a reason, and format it
	// only for a log line that is enabled or an action.
	v := lease.ClassOf(l, node, now, c.classify)
	explain := func() string { return lease.Classify(l, node, now, c.classify).Reason }
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(l.Namespace, l.Name), "class", v.Class)
	st := c.noteClass(logger, l, v.Class, explain)
	defer func() { c.metrics.decisions.Observe(time.Since(start).Seconds()) }()

	switch v.Class {
	case lease.Leaked:
		return c.handleLeaked(ctx, logger, l, node, st)
	case lease.Unowned:
		return c.handleUnowned(ctx, logger, l, node, st, now, explain)
	case lease.Zombie:
		return c.handleZombie(logger, l, v, st, now, explain), nil
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

func (c *Controller) handleLeaked(ctx context.Context, logger klog.Logger, l *coordinationv1.Lease, node *lease.NodeRef, st leaseState) (result, error) {
	if c.opts.DryRun && c.dryRunReported(l) {
		return result{}, nil // this version was already reported
	}
	if c.beforeAction != nil {
		c.beforeAction(l)
	}
	r := c.deleter.Delete(ctx, l, node)
	c.decided(l, r)
	kv := []any{"outcome", r.Outcome, "reason", r.Reason, "uid", l.UID, "resourceVersion", l.ResourceVersion}
	switch r.Outcome {
	case deleter.Deleted:
		logger.Info("Deleted leaked lease", kv...)
		c.metrics.deletions.WithLabelValues(resultDeleted).Inc()
		c.events.emit(l, corev1.EventTypeNormal, ReasonDeleted, "Delete", "Deleted leaked node lease: %s", r.Verdict.Reason)
	case deleter.WouldDelete:
		logger.Info("Dry run: would delete leaked lease", kv...)
		c.metrics.deletions.WithLabelValues(resultDryRun).Inc()
		c.events.emit(l, corev1.EventTypeNormal, ReasonWouldDelete, "Delete", "Dry run, not deleted: %s", r.Verdict.Reason)
		c.setDryRunRV(l)
	case deleter.NodeExists, deleter.PreconditionFailed:
		logger.Info("Safety check stopped a delete; re-classifying", kv...)
		c.metrics.deletions.WithLabelValues(resultPrecondition).Inc()
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
		return result{retry: true}, nil
	case deleter.Gone, deleter.NotLeaked:
		logger.V(2).Info("Nothing to delete", kv...)
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
	case deleter.Failed:
		c.metrics.deletions.WithLabelValues(resultError).Inc()
		return c.failed(logger, l, r)
	}
	return result{}, nil
}

func (c *Controller) handleUnowned(ctx context.Context, logger klog.Logger, l *coordinationv1.Lease, node *lease.NodeRef, st leaseState, now time.Time, explain func() string) (result, error) {
	if adoptAt := l.CreationTimestamp.Add(c.opts.AdoptAfter); now.Before(adoptAt) {
		if logger.V(2).Enabled() {
			logger.V(2).Info("Unowned lease is new; leaving it to its kubelet for now", "adoptAt", adoptAt, "reason", explain())
		}
		return result{after: until(now, adoptAt)}, nil
	}
	if c.opts.DryRun && c.dryRunReported(l) {
		return result{}, nil
	}
	if c.beforeAction != nil {
		c.beforeAction(l)
	}
	r := c.deleter.Adopt(ctx, l, node)
	c.decided(l, r)
	kv := []any{"outcome", r.Outcome, "reason", r.Reason, "uid", l.UID, "resourceVersion", l.ResourceVersion}
	switch r.Outcome {
	case deleter.Adopted:
		logger.Info("Adopted unowned lease", kv...)
		c.metrics.adoptions.WithLabelValues(resultAdopted).Inc()
		c.events.emit(l, corev1.EventTypeNormal, ReasonAdopted, "Adopt", "%s", r.Reason)
	case deleter.WouldAdopt:
		logger.Info("Dry run: would adopt unowned lease", kv...)
		c.metrics.adoptions.WithLabelValues(resultDryRun).Inc()
		c.events.emit(l, corev1.EventTypeNormal, ReasonWouldAdopt, "Adopt", "%s", r.Reason)
		c.setDryRunRV(l)
	case deleter.NodeMissing, deleter.PreconditionFailed:
		logger.Info("Safety check stopped an adoption; re-classifying", kv...)
		c.metrics.adoptions.WithLabelValues(resultPrecondition).Inc()
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
		return result{retry: true}, nil
	case deleter.Gone, deleter.NotUnowned:
		logger.V(2).Info("Nothing to adopt", kv...)
		c.metrics.skips.WithLabelValues(string(r.Outcome)).Inc()
	case deleter.Failed:
		c.metrics.adoptions.WithLabelValues(resultError).Inc()
		return c.failed(logger, l, r)
	}
	return result{}, nil
}

// handleZombie reports a kubelet that renews its lease without a Node, once per lease, and
// requeues the lease for the moment it would become leaked. It never deletes anything: a live
// kubelet would re-create the lease at once (before 1.29) or keep polling for it (1.29+).
func (c *Controller) handleZombie(logger klog.Logger, l *coordinationv1.Lease, v lease.Verdict, st leaseState, now time.Time, explain func() string) result {
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

// nodeRef returns the cached Node named name, or nil.
func (c *Controller) nodeRef(name string) *lease.NodeRef {
	obj, exists, err := c.nodeInformer.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return &lease.NodeRef{Name: m.GetName(), UID: m.GetUID()}
}

// classCounts classifies every cached lease now (for the per-class gauge), and counts the
// zombie leases that are still renewed (live zombie kubelets).
func (c *Controller) classCounts() (map[lease.Class]int, int) {
	counts := map[lease.Class]int{}
	live := 0
	if !c.synced.Load() {
		return counts, 0
	}
	now := c.clock.Now()
	var scratch coordinationv1.Lease // one Lease rebuilt per cached lease, not one allocated
	for _, obj := range c.leaseInformer.GetIndexer().List() {
		if cl, ok := obj.(*cachedLease); ok {
			l := cl.lease(&scratch)
			v := lease.ClassOf(l, c.nodeRef(l.Name), now, c.classify)
			counts[v.Class]++
			if v.Class == lease.Zombie && !v.Expired {
				live++
			}
		}
	}
	return counts, live
}

func (c *Controller) enqueue(name string) {
	if q := c.queue.Load(); q != nil {
		(*q).Add(name)
	}
}

func (c *Controller) enqueueObj(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		c.enqueue(m.GetName())
	}
}

func (c *Controller) leaseDeleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if _, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
		c.dropState(name) // a lease re-created under this name starts afresh
		c.enqueue(name)
	}
}

// nodeChanged re-classifies the lease named like a Node that arrived or left.
func (c *Controller) nodeChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if _, exists, _ := c.leaseInformer.GetIndexer().GetByKey(lease.NodeLeaseNamespace + "/" + key); exists {
		c.enqueue(key)
	}
}

// watchError counts a failed cache list or watch and logs it the way client-go would.
func (c *Controller) watchError(ctx context.Context, r *cache.Reflector, err error) {
	c.metrics.errors.WithLabelValues("list_watch").Inc()
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// stripManagedFields is the generic transform used for the full-Node comparison cache.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// slimNode keeps only what classification needs from a Node: its name and UID.
func slimNode(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{
			TypeMeta: m.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
				CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			},
		}, nil
	}
	return obj, nil
}
