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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kube"
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

// DefaultRateLimit is the client-side limit of the controller's lease and Node requests (the
// --qps and --burst defaults): its steady work is a trickle of deletes and adoptions, and a
// backlog after an outage must not crowd out the kubelets' own renewals.
var DefaultRateLimit = kube.RateLimit{QPS: 20, Burst: 50}

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
	// SecureMetrics: the metrics endpoint authenticates and authorizes its requests with the API
	// server (MetricsAuth), so the start-up check also demands MetricsAuthPermissions.
	SecureMetrics bool
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
	opts     Options
	deps     Deps
	classify lease.Options
	clock    clock.WithTicker
	deleter  *deleter.Deleter
	metrics  *metrics
	events   *eventEmitter // events.k8s.io Events about leases (paced, bounded)

	queue    atomic.Pointer[workqueue.TypedRateLimitingInterface[string]]
	progress chan struct{} // a worker finished an item (paces the first pass)
	synced   atomic.Bool
	leading  atomic.Bool
	watch    *leaderelection.HealthzAdaptor

	mu       sync.Mutex
	state    map[string]leaseState // by lease name (the key shares the cached name's bytes)
	dryRunRV map[string]string     // dry run: the lease version whose decision was reported

	// beforeAction, set only by tests, runs between classification and a delete or adoption so
	// that races with kubelets and users can be staged at the worst moment.
	beforeAction func(*coordinationv1.Lease)
}

// Deps are what a controller talks to and reads: clients, informers, event recorders and the
// clock, injected as in Kubernetes' own controllers so that the decisions can be driven by fake
// clients and a fake clock. NewDeps builds them from a client configuration.
type Deps struct {
	// Client sends the lease DELETEs and PATCHes and the start-up SelfSubjectAccessReviews.
	Client kube.Interface
	// Metadata sends the live Node GET that confirms each action.
	Metadata metadata.Interface
	// Leases informs about the Leases in kube-node-lease, Nodes about Nodes (metadata only is
	// enough). New sets their transforms and handlers, so they must not have been started; Run
	// starts them.
	Leases, Nodes cache.SharedIndexInformer
	// Recorder records events.k8s.io Events about leases; the controller paces and bounds them.
	Recorder events.EventRecorder
	// Election is the client for the election Lease, needed when leader election is enabled. It
	// should have its own rate limit and a short request timeout (NewDeps gives it both), so that
	// lease work never delays a renewal.
	Election kube.Interface
	// ElectionRecorder records core Events on the election Lease (nil: none).
	ElectionRecorder resourcelock.EventRecorder
	// Clock drives classification and requeues (nil: the real clock).
	Clock clock.WithTicker

	// background runs for the life of Run (the event broadcasters NewDeps created).
	background []func(ctx context.Context)
}

// NewForConfig builds a controller with clients and informers made from cfg (NewDeps).
func NewForConfig(cfg *rest.Config, opts Options) (*Controller, error) {
	deps, err := NewDeps(cfg, opts)
	if err != nil {
		return nil, err
	}
	return New(deps, opts)
}

// NewDeps builds a controller's dependencies from cfg (see kube.Configure), through kube.NewClients.
// cfg is used for leases and Nodes (its QPS and Burst are the client rate limit); events and
// leader election get side clients with their own fixed limits (kube.Events, kube.LeaderElection),
// the election client also a request timeout well within the renew deadline.
func NewDeps(cfg *rest.Config, opts Options) (Deps, error) {
	if cfg == nil {
		return Deps{}, errors.New("controller: no client configuration")
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return Deps{}, err
	}
	d := Deps{Client: clients.Kube, Metadata: clients.Metadata}
	// Informers without the namespace index the factories add: one namespace (or none, for
	// Nodes) makes it a second copy of every key.
	noIndex := cache.Indexers{}
	d.Leases = kube.LeaseInformer(d.Client, lease.NodeLeaseNamespace, noIndex, nil)
	if opts.fullNodes {
		d.Nodes = kube.NodeInformer(d.Client, noIndex, nil)
	} else {
		d.Nodes = metadatainformer.NewFilteredMetadataInformer(d.Metadata, kube.NodesResource, "", 0, noIndex, nil).Informer()
	}

	// Events are best effort and must not eat the lease work's rate limit: own client, own limit.
	evClient, err := kube.NewForConfig(kube.SideConfig(cfg, "events", kube.Events))
	if err != nil {
		return Deps{}, err
	}
	leaseEvents := events.NewBroadcaster(&events.EventSinkImpl{Interface: evClient.EventsV1()})
	d.Recorder = leaseEvents.NewRecorder(scheme.Scheme, eventComponentSource)
	d.background = append(d.background, func(ctx context.Context) {
		if err := leaseEvents.StartRecordingToSinkWithContext(ctx); err != nil {
			return
		}
		<-ctx.Done()
		leaseEvents.Shutdown()
	})

	if le := opts.LeaderElection; le.Enabled {
		if err := le.complete(); err != nil {
			return Deps{}, err
		}
		if d.Election, err = kube.NewForConfig(le.electionConfig(cfg)); err != nil {
			return Deps{}, err
		}
		// Leadership changes are recorded as core Events on the election Lease, through
		// client-go's own recorder interface (the lock cannot use the events.k8s.io recorder).
		electionEvents := record.NewBroadcaster()
		d.ElectionRecorder = electionEvents.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponentSource})
		d.background = append(d.background, func(ctx context.Context) {
			electionEvents.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: evClient.CoreV1().Events("")})
			<-ctx.Done()
			electionEvents.Shutdown()
		})
	}
	return d, nil
}

// New builds a controller from its dependencies; see Deps. It takes no client configuration:
// everything it talks to is given.
func New(deps Deps, opts Options) (*Controller, error) {
	if deps.Client == nil || deps.Metadata == nil || deps.Leases == nil || deps.Nodes == nil || deps.Recorder == nil {
		return nil, errors.New("controller: the lease client, the metadata client, both informers and the event recorder are required")
	}
	c := &Controller{opts: opts, deps: deps, state: map[string]leaseState{}, dryRunRV: map[string]string{}, progress: make(chan struct{}, 1)}
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
	c.clock = deps.Clock
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.opts.LeaderElection.Enabled {
		if err := c.opts.LeaderElection.complete(); err != nil {
			return nil, err
		}
		if deps.Election == nil {
			return nil, errors.New("controller: leader election needs its own client (Deps.Election)")
		}
		// Created here, before any probe can read it; each election term registers its elector.
		c.watch = leaderelection.NewLeaderHealthzAdaptor(c.opts.LeaderElection.LeaseDuration)
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	c.metrics = newMetrics(reg, c)
	var err error
	if c.deleter, err = deleter.New(deps.Client.CoordinationV1(), deps.Metadata, deleter.Options{
		Classify: c.classify, DryRun: opts.DryRun, Clock: c.clock,
	}); err != nil {
		return nil, err
	}
	c.events = newEventEmitter(deps.Recorder, c.metrics.eventsDropped)
	if err := c.watchCaches(); err != nil {
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
	for _, run := range c.deps.background {
		evWG.Go(func() { run(evCtx) })
	}
	defer evWG.Wait()
	defer stopEvents()
	infCtx, stopInformers := context.WithCancel(ctx)
	var infWG sync.WaitGroup
	defer infWG.Wait()
	defer stopInformers()
	for _, inf := range []cache.SharedIndexInformer{c.deps.Leases, c.deps.Nodes} {
		infWG.Go(func() { inf.RunWithContext(infCtx) })
	}
	logger.Info("Waiting for caches to sync", "namespace", lease.NodeLeaseNamespace, "nodeCache", c.nodeCacheKind())
	if !cache.WaitForCacheSync(ctx.Done(), c.deps.Leases.HasSynced, c.deps.Nodes.HasSynced) {
		return ctx.Err()
	}
	c.synced.Store(true)
	c.metrics.synced.Set(1)
	logger.Info("Caches synced", "leases", len(c.deps.Leases.GetIndexer().ListKeys()), "nodes", len(c.deps.Nodes.GetIndexer().ListKeys()),
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
