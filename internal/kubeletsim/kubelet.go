package kubeletsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// FieldManager is the field manager of every write a simulated kubelet makes. Real kubelets do
// not set one (the API server then records "kubelet"); the simulator follows the project rule
// that every write names its manager, and keeps the kubelet's name in it.
const FieldManager = "kubelet"

// ConfigFunc returns the client configuration of a kubelet identity; with testenv it is
//
//	func(node string) *rest.Config { return env.UserConfig("system:node:"+node, "system:nodes") }
type ConfigFunc func(nodeName string) *rest.Config

// Fleet runs many simulated kubelets in one process. Each kubelet has its own identity, its own
// HTTP/2 connection and its own goroutines, as separate machines would.
type Fleet struct {
	configFor ConfigFunc

	mu       sync.Mutex
	kubelets map[string]*Kubelet
}

// NewFleet returns an empty fleet whose kubelets authenticate with configFor(name).
func NewFleet(configFor ConfigFunc) *Fleet {
	return &Fleet{configFor: configFor, kubelets: map[string]*Kubelet{}}
}

// Start registers a new kubelet's Node and starts its heartbeats. ctx bounds the registration
// only: the kubelet runs until Stop or StopAll. A name can be started once per fleet; use
// Kubelet.Restart to start it again.
func (f *Fleet) Start(ctx context.Context, cfg Config) (*Kubelet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if f.configFor == nil {
		return nil, errors.New("kubeletsim: fleet has no ConfigFunc")
	}
	f.mu.Lock()
	if _, dup := f.kubelets[cfg.Name]; dup {
		f.mu.Unlock()
		return nil, fmt.Errorf("kubeletsim: kubelet %q already exists in this fleet (use Restart)", cfg.Name)
	}
	restCfg := f.configFor(cfg.Name)
	if restCfg == nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("kubeletsim: ConfigFunc returned no config for %q", cfg.Name)
	}
	k := &Kubelet{cfg: cfg, restCfg: rest.CopyConfig(restCfg)}
	f.kubelets[cfg.Name] = k
	f.mu.Unlock()

	if err := k.start(ctx); err != nil {
		f.mu.Lock()
		delete(f.kubelets, cfg.Name)
		f.mu.Unlock()
		return nil, err
	}
	return k, nil
}

// StartAll starts kubelets for cfgs with at most parallel registrations in flight, returning
// them in the order of cfgs. On error the kubelets already started keep running (StopAll ends them).
func (f *Fleet) StartAll(ctx context.Context, cfgs []Config, parallel int) ([]*Kubelet, error) {
	if parallel < 1 {
		parallel = 1
	}
	out := make([]*Kubelet, len(cfgs))
	errs := make([]error, len(cfgs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range cfgs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = f.Start(ctx, cfgs[i])
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Get returns the kubelet named name, or nil.
func (f *Fleet) Get(name string) *Kubelet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kubelets[name]
}

// Kubelets returns every kubelet of the fleet, sorted by name.
func (f *Fleet) Kubelets() []*Kubelet {
	f.mu.Lock()
	out := make([]*Kubelet, 0, len(f.kubelets))
	for _, k := range f.kubelets {
		out = append(out, k)
	}
	f.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Name < out[j].cfg.Name })
	return out
}

// Stats sums the request counters of every kubelet.
func (f *Fleet) Stats() Stats {
	var s Stats
	for _, k := range f.Kubelets() {
		s = s.Add(k.Stats())
	}
	return s
}

// StopAll stops every kubelet (their Nodes and leases stay, as when machines die) and waits
// until all their goroutines have ended.
func (f *Fleet) StopAll() {
	var wg sync.WaitGroup
	for _, k := range f.Kubelets() {
		wg.Add(1)
		go func() { defer wg.Done(); k.Stop() }()
	}
	wg.Wait()
}

// Kubelet is one simulated kubelet.
type Kubelet struct {
	cfg     Config
	restCfg *rest.Config
	c       counters
	trace   trace
	nodeUID atomic.Value // types.UID of the Node this kubelet last registered

	mu  sync.Mutex // serialises start/Stop/Restart
	run *instance  // nil while stopped
}

// instance is one run of a kubelet process: from start to Stop.
type instance struct {
	k         *Kubelet
	logger    logr.Logger
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	transport http.RoundTripper
	heartbeat Client // timeout = heartbeat timeout, no client-side throttling
	// informerDone is closed when the Node informer has stopped (after cancel).
	informerDone chan struct{}
	nodes        corelisters.NodeLister

	// Node status bookkeeping, touched only by the status goroutine.
	lastStatusReport time.Time
	statusDelay      time.Duration
}

// Name is the Node and lease name.
func (k *Kubelet) Name() string { return k.cfg.Name }

// Config returns the kubelet's configuration with all defaults filled in.
func (k *Kubelet) Config() Config { return k.cfg }

// Stats returns the cumulative request counters.
func (k *Kubelet) Stats() Stats { return k.c.snapshot() }

// Requests returns the requests sent at or after from (at most the last 256), oldest first.
// Each is stamped with the time it was sent.
func (k *Kubelet) Requests(from time.Time) []Request { return k.trace.since(from) }

// NodeUID is the UID of the Node this kubelet registered (or found) at its last start.
func (k *Kubelet) NodeUID() types.UID {
	uid, _ := k.nodeUID.Load().(types.UID)
	return uid
}

// Running reports whether the kubelet is running (started and not stopped).
func (k *Kubelet) Running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.run != nil
}

// Stop ends the kubelet as if its machine died: heartbeats and status updates stop, its
// connection closes, and its Node and lease stay as they are. Stopping a stopped kubelet is a no-op.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopLocked()
}

func (k *Kubelet) stopLocked() {
	if k.run == nil {
		return
	}
	r := k.run
	k.run = nil
	r.cancel()
	r.wg.Wait()
	<-r.informerDone
	utilnet.CloseIdleConnectionsFor(r.transport)
}

// Restart stops the kubelet if it runs and starts it again, as `systemctl restart kubelet`
// does: the new process registers its Node if it is missing (a new UID) and its lease
// controller starts without a cached lease, so a lease without owner gets one again.
func (k *Kubelet) Restart(ctx context.Context) error {
	k.Stop()
	return k.start(ctx)
}

// RecreateNode deletes the kubelet's Node and creates it again under the same name, so it gets a
// new UID while the kubelet keeps running — as an operator's `kubectl replace --force` or an
// autoscaler reusing a name would. The lease keeps its ownerReference to the old UID until the
// garbage collector notices. client needs permission to delete and create nodes (an admin).
func (k *Kubelet) RecreateNode(ctx context.Context, client Client) (types.UID, error) {
	old, err := client.CoreV1().Nodes().Get(ctx, k.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get node %s: %w", k.cfg.Name, err)
	}
	err = client.CoreV1().Nodes().Delete(ctx, k.cfg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete node %s: %w", k.cfg.Name, err)
	}
	created, err := client.CoreV1().Nodes().Create(ctx, k.cfg.newNode(time.Now()), metav1.CreateOptions{FieldManager: "nodekeeper-kubeletsim"})
	if err != nil {
		return "", fmt.Errorf("create node %s: %w", k.cfg.Name, err)
	}
	return created.UID, nil
}

// noProxy keeps the transport out of client-go's global TLS transport cache (a config with a
// Proxy func is not cacheable): each kubelet then owns its connection and can close it on Stop.
// Loopback addresses are never proxied anyway.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

func (k *Kubelet) start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.run != nil {
		return fmt.Errorf("kubeletsim: kubelet %q is already running", k.cfg.Name)
	}
	cfg := rest.CopyConfig(k.restCfg)
	cfg.UserAgent = k.cfg.userAgent()
	// Kubelets talk protobuf to the API server, which is also what makes a large fleet cheap.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Proxy = noProxy
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return fmt.Errorf("kubeletsim: transport for %s: %w", k.cfg.Name, err)
	}
	counted := &countingTransport{next: rt, c: &k.c, trace: &k.trace}
	heartbeat, err := NewClient(cfg, &http.Client{Transport: counted, Timeout: k.cfg.heartbeatTimeout()})
	if err != nil {
		return err
	}
	watching, err := NewClient(cfg, &http.Client{Transport: counted})
	if err != nil {
		return err
	}

	logger := klog.FromContext(ctx).WithName("kubeletsim").WithValues("node", k.cfg.Name, "mode", k.cfg.Mode)
	r := &instance{k: k, logger: logger, transport: counted, heartbeat: heartbeat}
	if err := r.register(ctx); err != nil {
		utilnet.CloseIdleConnectionsFor(counted)
		return err
	}

	// The kubelet reads its own Node through an informer restricted to its name; the first
	// status attempt of every sync is served from it, retries GET from the API server.
	// One informer rather than a SharedInformerFactory, whose ForResource links every API group's.
	nodeInformer := newNodeInformer(watching, fields.OneTermEqualSelector(metav1.ObjectNameField, k.cfg.Name).String())
	r.nodes = corelisters.NewNodeLister(nodeInformer.GetIndexer())

	runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	r.cancel = cancel
	r.informerDone = make(chan struct{})
	go func() {
		defer close(r.informerDone)
		nodeInformer.RunWithContext(runCtx)
	}()

	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.runLease(runCtx)
	}()
	go func() {
		defer r.wg.Done()
		// Like the kubelet, do not block on the cache: an unsynced lister just falls through
		// to a direct GET on the first retry.
		wait.PollUntilContextTimeout(runCtx, 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return nodeInformer.HasSynced(), nil
		})
		wait.JitterUntilWithContext(runCtx, r.syncNodeStatus, k.cfg.NodeStatusUpdateFrequency, 0.04, true)
	}()
	k.run = r
	return nil
}

// register creates the kubelet's Node, or accepts the existing one, retrying with the kubelet's
// backoff (100 ms doubling to 7 s) until it succeeds or ctx ends.
func (r *instance) register(ctx context.Context) error {
	k := r.k
	backoff := 100 * time.Millisecond
	// answer is the last error the API server itself gave: the attempt the context cut short
	// says only "context deadline exceeded", which on a slow machine would hide why every
	// earlier attempt failed (a NodeRestriction refusal, say).
	var answer error
	for {
		node, err := r.heartbeat.CoreV1().Nodes().Create(ctx, k.cfg.newNode(time.Now()), metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			node, err = r.heartbeat.CoreV1().Nodes().Get(ctx, k.cfg.Name, metav1.GetOptions{})
		}
		if err == nil {
			k.nodeUID.Store(node.UID)
			r.logger.V(2).Info("Successfully registered node", "uid", node.UID)
			return nil
		}
		r.logger.Error(err, "Unable to register node with API server")
		if ctx.Err() == nil || answer == nil {
			answer = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubeletsim: register node %s: %w (last error: %v)", k.cfg.Name, ctx.Err(), answer)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 7*time.Second)
	}
}

func (r *instance) onRepeatedHeartbeatFailure() { r.k.c.heartbeatFailures.Add(1) }

// runLease runs the node lease heartbeat of the kubelet's generation until ctx ends.
func (r *instance) runLease(ctx context.Context) {
	k := r.k
	owner := setNodeOwner(ctx, r.heartbeat, k.cfg.Name)
	switch k.cfg.Mode {
	case Legacy:
		l := &legacyLease{
			client:        r.heartbeat.CoordinationV1().Leases(NodeLeaseNamespace),
			name:          k.cfg.Name,
			duration:      k.cfg.LeaseDurationSeconds,
			setOwner:      owner,
			onRepeatedErr: r.onRepeatedHeartbeatFailure,
			clock:         clock.RealClock{},
		}
		wait.JitterUntilWithContext(ctx, l.sync, k.cfg.RenewInterval, 0.04, true)
	default:
		// The upstream controller is what 1.29+ kubelets run. Only Run is used: Start and Stop
		// delete the lease, which is API server identity behaviour, not kubelet behaviour.
		c := lease.NewController(clock.RealClock{}, leaseOnly{c: r.heartbeat}, k.cfg.Name, k.cfg.LeaseDurationSeconds,
			r.onRepeatedHeartbeatFailure, k.cfg.RenewInterval, k.cfg.Name, NodeLeaseNamespace, owner)
		c.Run(ctx)
	}
}

// setNodeOwner is the kubelet's lease post-processing: while the lease has no ownerReference it
// GETs the Node and, if that works, makes the Node the lease's only owner. Its error is what the
// two generations treat differently: modern controllers skip the write, legacy ones write anyway.
func setNodeOwner(ctx context.Context, client Client, nodeName string) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to get node when trying to set owner ref to the node lease", "node", klog.KRef("", nodeName))
			return err
		}
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: corev1.SchemeGroupVersion.Version,
			Kind:       "Node",
			Name:       nodeName,
			UID:        node.UID,
		}}
		return nil
	}
}
