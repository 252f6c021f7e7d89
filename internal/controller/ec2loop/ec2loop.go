// Package ec2loop is the controller's EC2 loop (`controller --aws`, opt-in and read-only): every
// few minutes it lists the running instances tagged for the EKS cluster (package instances:
// paginated DescribeInstances, no per-instance call), then the Nodes' providerIDs (a paginated
// LIST on its own rate-limited client), and reports the instances no Node stands for: the
// nodekeeper_instances_without_node gauges and one Warning Event per instance. Only the leader
// scans: every replica would otherwise make the same DescribeInstances calls and Node LISTs,
// multiplying the cost and the throttling by the replica count for the same answer.
//
// It is independent of the lease work: its own goroutine, its own Kubernetes client and rate
// limit, its own deadline per scan. A slow, throttling or denying AWS delays or fails only its
// own scans (counted by result in nodekeeper_instance_scans_total); the lease controller neither
// waits for it nor shares anything with it but the metrics registry.
package ec2loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Defaults for Options.
const (
	DefaultInterval = 5 * time.Minute
	// DefaultRegisterGrace leaves a new instance this long to register its Node (doctor --aws
	// waits as long).
	DefaultRegisterGrace = 10 * time.Minute
	// MaxEventsPerScan bounds the Events one scan records; instances not reported yet are
	// reported by the next scans.
	MaxEventsPerScan = 50
	// StandbyRecheck is how often a replica that does not lead looks whether it leads now.
	StandbyRecheck = time.Second
	// nodePage is the page size of the Node LIST.
	nodePage = kube.DefaultChunkSize
)

// ReasonInstanceWithoutNode is the reason of the Warning Event about an instance without a Node.
const ReasonInstanceWithoutNode = "InstanceWithoutNode"

// RateLimit is the fixed limit of the loop's own Kubernetes client (Node pages and Events): a
// scan is a few pages every few minutes, and it must neither starve nor be starved by the lease
// work, whatever --qps says.
var RateLimit = kube.RateLimit{QPS: 5, Burst: 10}

// Options configure a Loop.
type Options struct {
	// Cluster is the EKS cluster name the instances are tagged with (required).
	Cluster string
	// Interval between the starts of two scans (default DefaultInterval).
	Interval time.Duration
	// RegisterGrace: an instance launched less than this ago is not reported (default
	// DefaultRegisterGrace).
	RegisterGrace time.Duration
	// Timeout bounds one scan, AWS retries included (default: Interval).
	Timeout time.Duration
	// Registry receives the loop's metrics (required: the controller's registry).
	Registry prometheus.Registerer
	// OnScan, when set, is called after every scan (tests and benchmarks).
	OnScan func(Scan)
}

// Deps are what the loop talks to.
type Deps struct {
	// EC2 lists the instances.
	EC2 instances.API
	// Client lists Nodes; give it its own rate limit (NewDeps uses RateLimit).
	Client kube.Interface
	// Recorder records the Warning Events (nil: none).
	Recorder events.EventRecorder
	// Leading reports whether this replica is the leader; only the leader scans (and records
	// Events); a standby skips its ticks and exports 0 (nil: always the leader).
	Leading func() bool
	// Clock (nil: the real clock).
	Clock clock.WithTicker

	background []func(ctx context.Context)
}

// NewDeps builds the Kubernetes side of the loop's dependencies from cfg (the controller's
// configuration, see kube.Configure): a protobuf client with RateLimit and the user agent role
// "ec2-loop", and an events.k8s.io recorder on it. api is the EC2 client.
func NewDeps(cfg *rest.Config, api instances.API, leading func() bool) (Deps, error) {
	if cfg == nil || api == nil {
		return Deps{}, errors.New("ec2loop: a client configuration and an EC2 client are required")
	}
	client, err := kube.NewForConfig(kube.Protobuf(kube.SideConfig(cfg, "ec2-loop", RateLimit)))
	if err != nil {
		return Deps{}, err
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	d := Deps{EC2: api, Client: client, Leading: leading, Recorder: b.NewRecorder(scheme.Scheme, "nodekeeper-controller")}
	d.background = append(d.background, func(ctx context.Context) {
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			return
		}
		<-ctx.Done()
		b.Shutdown()
	})
	return d, nil
}

// Scan is what one scan found.
type Scan struct {
	At time.Time
	// Result is "success", or the failure kind (instances.Classify) of the EC2 listing, or
	// "error" for a failed Node LIST.
	Result string
	Err    error
	// Calls are the DescribeInstances calls made.
	Calls int
	// Running and Nodes are how many instances and Nodes were compared.
	Running, Nodes int
	// WithoutNode are the running instances no Node stands for, oldest first.
	WithoutNode []instances.Orphan
	// Events recorded by this scan.
	Events int
}

// ResultSuccess is the result label of a scan that compared instances and Nodes.
const ResultSuccess = "success"

// ResultStandby is the Result of a tick on a replica that is not the leader: it called nothing
// and is not counted in nodekeeper_instance_scans_total.
const ResultStandby = "standby"

// Loop is the controller's EC2 loop.
type Loop struct {
	opts    Options
	deps    Deps
	clock   clock.WithTicker
	metrics *metrics

	mu       sync.Mutex
	reported map[string]bool // instance IDs an Event was recorded for, while still without Node
}

// New builds a loop; Run runs it.
func New(deps Deps, opts Options) (*Loop, error) {
	if deps.EC2 == nil || deps.Client == nil {
		return nil, errors.New("ec2loop: the EC2 client and the Kubernetes client are required")
	}
	if strings.TrimSpace(opts.Cluster) == "" {
		return nil, errors.New("ec2loop: the EKS cluster name is required (its instances are found by their tags)")
	}
	if opts.Registry == nil {
		return nil, errors.New("ec2loop: a metrics registry is required")
	}
	if opts.Interval < 0 || opts.RegisterGrace < 0 || opts.Timeout < 0 {
		return nil, errors.New("ec2loop: interval, register grace and timeout must not be negative")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.RegisterGrace == 0 {
		opts.RegisterGrace = DefaultRegisterGrace
	}
	if opts.Timeout == 0 {
		opts.Timeout = opts.Interval
	}
	l := &Loop{opts: opts, deps: deps, clock: deps.Clock, reported: map[string]bool{}}
	if l.clock == nil {
		l.clock = clock.RealClock{}
	}
	var err error
	if l.metrics, err = newMetrics(opts.Registry); err != nil {
		return nil, err
	}
	return l, nil
}

// Run scans at once and then every Interval until ctx ends. A scan that fails is logged and
// counted; the next one starts on time.
func (l *Loop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("ec2")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, run := range l.deps.background {
		wg.Go(func() { run(ctx) })
	}
	logger.Info("EC2 loop started", "cluster", l.opts.Cluster, "interval", l.opts.Interval, "registerGrace", l.opts.RegisterGrace)
	for {
		start := l.clock.Now()
		s := l.ScanOnce(ctx)
		// The next scan starts Interval after this one started. A standby looks again within
		// StandbyRecheck, so that a replica that wins the election (the first one at start-up
		// too, whose caches sync before it leads) scans at once rather than an Interval later.
		next := l.opts.Interval
		if s.Result == ResultStandby {
			next = min(next, StandbyRecheck)
		}
		t := l.clock.NewTimer(max(next-l.clock.Since(start), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// ScanOnce runs one scan within Options.Timeout: the instances first, then the Nodes, so that
// a Node registered in between is seen and its instance not reported.
func (l *Loop) ScanOnce(ctx context.Context) Scan {
	logger := klog.FromContext(ctx)
	if !l.leading() {
		// The leader's gauges say what the cluster has; a former leader's last values would be
		// stale beside them, so a standby exports 0 (the alerts and dashboards take the max).
		l.metrics.withoutNode.Set(0)
		l.metrics.oldest.Set(0)
		s := Scan{At: l.clock.Now(), Result: ResultStandby}
		if l.opts.OnScan != nil {
			l.opts.OnScan(s)
		}
		return s
	}
	// The deadline runs on the loop's clock, so that tests can pass it without waiting.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deadline := l.clock.NewTimer(l.opts.Timeout)
	defer deadline.Stop()
	go func() {
		select {
		case <-deadline.C():
			cancel(fmt.Errorf("the EC2 scan took longer than its deadline of %s", l.opts.Timeout))
		case <-ctx.Done():
		}
	}()
	s := Scan{At: l.clock.Now()}
	listing, err := instances.ListRunning(ctx, l.deps.EC2, l.opts.Cluster)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	s.Calls = listing.Calls
	l.metrics.calls.Add(float64(listing.Calls))
	if err != nil {
		s.Result, s.Err = instances.Classify(err), err
		logger.Error(err, "EC2 scan failed; the lease work goes on", "result", s.Result, "permission", instances.PermDescribeInstances, "calls", s.Calls)
		return l.finish(s)
	}
	nodes, err := l.nodes(ctx)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	if err != nil {
		s.Result, s.Err = instances.FailureOther, err
		logger.Error(err, "EC2 scan: listing the Nodes failed")
		return l.finish(s)
	}
	s.Result, s.Running, s.Nodes = ResultSuccess, len(listing.Running), nodes.Len()
	s.WithoutNode = instances.WithoutNode(listing.Running, nodes, s.At, l.opts.RegisterGrace)
	l.metrics.withoutNode.Set(float64(len(s.WithoutNode)))
	oldest := 0.0
	if len(s.WithoutNode) > 0 {
		oldest = s.WithoutNode[0].Age.Seconds()
	}
	l.metrics.oldest.Set(oldest)
	s.Events = l.report(ctx, s.WithoutNode)
	logger.V(1).Info("EC2 scan", "running", s.Running, "nodes", s.Nodes, "withoutNode", len(s.WithoutNode), "calls", s.Calls)
	return l.finish(s)
}

func (l *Loop) finish(s Scan) Scan {
	l.metrics.scans.WithLabelValues(s.Result).Inc()
	if l.opts.OnScan != nil {
		l.opts.OnScan(s)
	}
	return s
}

// nodes reads every Node's name and providerID, page by page: the loop keeps nothing else of a
// Node, and no more than one page at a time.
func (l *Loop) nodes(ctx context.Context) (*instances.NodeSet, error) {
	set := instances.NewNodeSet(0)
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: nodePage}, l.deps.Client.CoreV1().Nodes().List, func(page *corev1.NodeList) error {
		for i := range page.Items {
			set.Add(instances.Node{Name: page.Items[i].Name, ProviderID: page.Items[i].Spec.ProviderID})
		}
		return nil
	})
	return set, err
}

// report, on the leader, logs each instance without a Node the first time it is seen and
// records a Warning Event about it (at most MaxEventsPerScan a scan; the rest on later scans). An instance that gets a
// Node, or stops, is forgotten, so that it is reported again if it loses its Node later.
func (l *Loop) report(ctx context.Context, orphans []instances.Orphan) int {
	logger := klog.FromContext(ctx)
	leading := l.leading() // leadership can end during the scan
	l.mu.Lock()
	defer l.mu.Unlock()
	current := make(map[string]bool, len(orphans))
	n := 0
	for _, o := range orphans {
		id := o.ID()
		current[id] = l.reported[id]
		if l.reported[id] || !leading || l.deps.Recorder == nil || n >= MaxEventsPerScan {
			continue
		}
		current[id] = true
		n++
		note := describe(o)
		logger.Info("EC2 instance runs without a Node", "instance", id, "age", o.Age.Round(time.Second))
		// Events land in kube-node-lease, where the controller records its lease Events (and
		// has the permission to), regarding the node lease the instance's kubelet holds or
		// would hold: its Node's name, which on EKS is the private DNS name.
		l.deps.Recorder.Eventf(leaseRef(o), nil, corev1.EventTypeWarning, ReasonInstanceWithoutNode, "Report", "%s", note)
	}
	l.reported = current
	return n
}

func (l *Loop) leading() bool { return l.deps.Leading == nil || l.deps.Leading() }

func leaseRef(o instances.Orphan) *corev1.ObjectReference {
	name := o.ID()
	if dns := o.Instance.PrivateDnsName; dns != nil && *dns != "" {
		name = *dns
	}
	return &corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: lease.NodeLeaseNamespace, Name: name}
}

// describe is the Event's note: what EC2 says of the instance, its tags' text escaped and the
// note clipped to what the API accepts.
func describe(o instances.Orphan) string {
	inst := o.Instance
	var b strings.Builder
	fmt.Fprintf(&b, "EC2 instance %s (%s) has been running for %s with no Node", o.ID(), inst.InstanceType, o.Age.Round(time.Minute))
	if inst.LaunchTime != nil {
		fmt.Fprintf(&b, " (launched %s)", inst.LaunchTime.UTC().Format(time.RFC3339))
	}
	for _, t := range []struct{ key, what string }{{"karpenter.sh/nodepool", "Karpenter nodepool"}, {"eks:nodegroup-name", "node group"}} {
		if v := instances.TagValue(inst.Tags, t.key); v != "" {
			fmt.Fprintf(&b, "; %s %s", t.what, textsafe.Escape(v))
		}
	}
	b.WriteString(": it is billed but runs no pods; terminate it, or find why its kubelet cannot register")
	return textsafe.ClipBytes(b.String(), 1000)
}

// RunBeside runs the loop (when not nil) beside main, the lease controller's Run: main never
// waits for a scan, and when main returns the loop is stopped and waited for, so that neither
// outlives the other. It returns main's error.
func RunBeside(ctx context.Context, l *Loop, main func(context.Context) error) error {
	if l == nil {
		return main(ctx)
	}
	loopCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(loopCtx) })
	err := main(ctx)
	stop()
	wg.Wait()
	return err
}
