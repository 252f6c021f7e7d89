// Package checks is the controller's check loop (`controller --checks`, opt-in and read-only):
// every --checks-interval the leader runs doctor's cluster checks (with --aws the EC2 ones too),
// takes from them the measured cause of the pods stuck on each node (NK743-NK747), and computes
// plan's headroom for each node group at today's settings. What it finds surfaces three ways:
// gauges without any node, pod or instance label (metrics.go), Warning Events on the Node whose
// pods are stuck and on the aws-node DaemonSet for its findings, once per cause per object and a
// bounded number per run (events.go), and the alert rules over those gauges (deploy/).
//
// It is independent of the lease work, as the EC2 loop is: its own goroutine, its own clients and
// rate limit, its own deadline per run. A slow or failing check delays or fails only its own run
// (counted by result in nodekeeper_check_runs_total). Standbys read nothing: only the leader runs
// the checks, and a replica that is not leading exports no findings.
//
// The loop reads the cluster through Reader (reader.go), today doctor's and plan's gathers.
package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Defaults for Options.
const (
	DefaultInterval = 5 * time.Minute
	// DefaultHeadroomAlert is the headroom, in nodes, below which NodekeeperScaleUpHeadroomLow
	// fires.
	DefaultHeadroomAlert = 10
	// MaxEventsPerRun bounds the Events one run records; causes not reported yet are reported
	// by the next runs.
	MaxEventsPerRun = 50
)

// RateLimit is the fixed limit of the loop's own Kubernetes clients: a run lists Nodes, pods and
// events in pages and asks every aws-node pod for its metrics through the pod proxy (which the
// API server serves outside its priority levels), so it must neither starve nor be starved by
// the lease work, whatever --qps says.
var RateLimit = kube.RateLimit{QPS: 20, Burst: 40}

// Options configure a Loop.
type Options struct {
	// Interval between the starts of two runs (default DefaultInterval).
	Interval time.Duration
	// Timeout bounds one run (default: Interval).
	Timeout time.Duration
	// HeadroomAlert is exported as nodekeeper_scaleup_headroom_threshold_nodes: the alert
	// NodekeeperScaleUpHeadroomLow compares the headroom with it (0: DefaultHeadroomAlert).
	HeadroomAlert int
	// Doctor tunes doctor's checks (thresholds, the aws-node DaemonSet's name, EC2 with --aws).
	// Now is set by the loop, from its clock.
	Doctor doctor.Options
	// Registry receives the loop's metrics (required: the controller's registry).
	Registry prometheus.Registerer
	// OnRun, when set, is called after every run (tests and benchmarks).
	OnRun func(Run)
}

// Deps are what the loop talks to.
type Deps struct {
	// Reader reads the cluster (required; NewReader).
	Reader Reader
	// Recorder records the Warning Events (nil: none).
	Recorder events.EventRecorder
	// Leading reports whether this replica is the leader; only the leader runs the checks
	// (nil: always).
	Leading func() bool
	// Clock (nil: the real clock).
	Clock clock.WithTicker
	// KubeletConfig, when set, reads each kubelet's configuration into the facts after doctor's
	// gather (--checks-kubelet-config: straight from the kubelets, kubeletconfig.go).
	KubeletConfig func(ctx context.Context, f *doctor.Facts)

	background []func(ctx context.Context)
}

// NewDeps builds the loop's dependencies from cfg (the controller's configuration, see
// kube.Configure): the reader on clients limited to RateLimit, and an events.k8s.io recorder on
// a client of its own (kube.Events). ec2, when set, adds doctor's EC2 checks and plan's subnet
// limit (--aws); kubeletConfig reads each kubelet's configuration straight from the kubelet
// (--checks-kubelet-config).
func NewDeps(cfg *rest.Config, ec2 nkaws.EC2API, leading func() bool, kubeletConfig bool) (Deps, error) {
	if cfg == nil {
		return Deps{}, errors.New("checks: a client configuration is required")
	}
	reader, err := NewReader(cfg, RateLimit, ec2)
	if err != nil {
		return Deps{}, err
	}
	client, err := kube.NewForConfig(kube.SideConfig(cfg, "checks-events", kube.Events))
	if err != nil {
		return Deps{}, err
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	d := Deps{Reader: reader, Leading: leading, Recorder: b.NewRecorder(scheme.Scheme, "nodekeeper-controller")}
	if kubeletConfig {
		kr, err := newKubeletConfigReader(cfg, KubeletConfigOptions{})
		if err != nil {
			return Deps{}, err
		}
		d.KubeletConfig = kr.fill
	}
	d.background = append(d.background, func(ctx context.Context) {
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			return
		}
		<-ctx.Done()
		b.Shutdown()
	})
	return d, nil
}

// The values of nodekeeper_check_runs_total's result label.
const (
	// ResultSuccess: every part of the run read and judged what it needed.
	ResultSuccess = "success"
	// ResultPartial: doctor's checks ran, the headroom could not be computed.
	ResultPartial = "partial"
	// ResultError: the run failed (the API server could not be used, or the deadline passed).
	ResultError = "error"
)

// RunResults are the values of nodekeeper_check_runs_total's result label.
var RunResults = []string{ResultSuccess, ResultPartial, ResultError}

// Run is what one check run found.
type Run struct {
	At       time.Time
	Duration time.Duration
	// Result is ResultSuccess, ResultPartial or ResultError; Err says why for the last two.
	Result string
	Err    error
	// Findings counts the findings by code and severity (findingKey).
	Findings map[findingKey]int
	// Stuck counts the stuck pods by cause; StuckNodes is each node's cause, by node name.
	Stuck      map[string]int
	StuckNodes map[string]NodeCause
	// Headroom are the node groups' limits with a bound.
	Headroom []Headroom
	// Events recorded by this run.
	Events int
}

// Loop is the controller's check loop.
type Loop struct {
	opts    Options
	deps    Deps
	clock   clock.WithTicker
	metrics *metrics
	events  *reporter
}

// New builds a loop; Run runs it.
func New(deps Deps, opts Options) (*Loop, error) {
	if deps.Reader == nil {
		return nil, errors.New("checks: a cluster reader is required")
	}
	if opts.Registry == nil {
		return nil, errors.New("checks: a metrics registry is required")
	}
	if opts.Interval < 0 || opts.Timeout < 0 || opts.HeadroomAlert < 0 {
		return nil, errors.New("checks: interval, timeout and headroom alert must not be negative")
	}
	if opts.HeadroomAlert == 0 {
		opts.HeadroomAlert = DefaultHeadroomAlert
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout == 0 {
		opts.Timeout = opts.Interval
	}
	if err := opts.Doctor.Validate(); err != nil {
		return nil, fmt.Errorf("checks: %w", err)
	}
	opts.Doctor = doctorDefaults(opts.Doctor)
	l := &Loop{opts: opts, deps: deps, clock: deps.Clock}
	if l.clock == nil {
		l.clock = clock.RealClock{}
	}
	l.opts.Doctor.Now = l.clock.Now
	var err error
	if l.metrics, err = newMetrics(opts.Registry); err != nil {
		return nil, err
	}
	l.metrics.threshold.Set(float64(opts.HeadroomAlert))
	l.events = newReporter(deps.Recorder)
	return l, nil
}

// doctorDefaults fills what doctor.Run would before its gather: the loop calls doctor.Gather
// itself, and a zero worker count would leave the fan-outs without a worker.
func doctorDefaults(o doctor.Options) doctor.Options {
	if o.Workers <= 0 {
		o.Workers = doctor.DefaultWorkers
	}
	if o.CNIMetricsWorkers <= 0 {
		o.CNIMetricsWorkers = doctor.DefaultWorkers
	}
	if o.ConfigzTimeout <= 0 {
		o.ConfigzTimeout = 10 * time.Second
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = kube.DefaultChunkSize
	}
	if o.AWSNodeNamespace == "" {
		o.AWSNodeNamespace = "kube-system"
	}
	if o.AWSNodeName == "" {
		o.AWSNodeName = "aws-node"
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = doctor.DefaultStuckAfter
	}
	if o.CSRPendingAfter <= 0 {
		o.CSRPendingAfter = doctor.DefaultCSRPendingAfter
	}
	// The loop never reads nodes/proxy, whatever its credentials allow: the kubelets'
	// configuration comes only from Deps.KubeletConfig (nodes/configz).
	o.SkipConfigz = true
	return o
}

// StandbyRecheck is how often a replica that does not lead looks whether it leads now, as the
// EC2 loop's standby does: a replica that wins the election (the first one at start-up too,
// whose caches sync before it leads) checks within it rather than an Interval later.
const StandbyRecheck = time.Second

// Run runs the checks at once and then every Interval until ctx ends, on the leader only. A run
// that fails is logged and counted; the next one starts on time, Interval after this one started.
func (l *Loop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("checks")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, run := range l.deps.background {
		wg.Go(func() { run(ctx) })
	}
	logger.Info("Check loop started", "interval", l.opts.Interval, "ec2", l.opts.Doctor.EC2 != nil)
	for {
		start := l.clock.Now()
		next := l.opts.Interval
		if l.deps.Leading == nil || l.deps.Leading() {
			l.RunOnce(ctx)
		} else {
			// A standby reads nothing and says nothing: the leader's gauges are the truth, and
			// a former leader's would go stale.
			l.metrics.clear()
			l.events.forget()
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

// RunOnce runs the checks once within Options.Timeout and exports what they found.
func (l *Loop) RunOnce(ctx context.Context) Run {
	logger := klog.FromContext(ctx)
	// The deadline runs on the loop's clock, so that tests can pass it without waiting.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deadline := l.clock.NewTimer(l.opts.Timeout)
	defer deadline.Stop()
	go func() {
		select {
		case <-deadline.C():
			cancel(fmt.Errorf("the check run took longer than its deadline of %s", l.opts.Timeout))
		case <-ctx.Done():
		}
	}()
	r := Run{At: l.clock.Now()}
	start := time.Now() // the duration is the real one, whatever clock the loop runs on
	defer func() {
		r.Duration = time.Since(start)
		l.metrics.duration.Observe(r.Duration.Seconds())
		l.metrics.runs.WithLabelValues(r.Result).Inc()
		if l.opts.OnRun != nil {
			l.opts.OnRun(r)
		}
	}()

	o := l.opts.Doctor
	facts, err := l.deps.Reader.Facts(ctx, o)
	switch {
	case err != nil && ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
	case ctx.Err() != nil:
		// doctor records reads the deadline cut short as missing facts: judging them would
		// report skipped checks that only ran out of time.
		err = context.Cause(ctx)
	}
	if err != nil {
		r.Result, r.Err = ResultError, err
		logger.Error(err, "Check run failed; the lease work goes on")
		return r
	}
	if l.deps.KubeletConfig != nil {
		l.deps.KubeletConfig(ctx, facts)
	}
	rep := findings.NewReport("controller", "", r.At)
	doctor.RunChecks(rep, facts, l.deps.Reader.Checks(o))
	all := rep.Findings()
	r.Findings = countFindings(all)
	r.StuckNodes, r.Stuck = stuckCauses(facts, all)
	l.metrics.setFindings(r.Findings)
	l.metrics.setStuck(r.Stuck)

	r.Result = ResultSuccess
	headroom, err := l.headroom(ctx, facts)
	if err != nil {
		r.Result, r.Err = ResultPartial, err
		logger.Error(err, "Check run: the node groups' headroom could not be computed")
	} else {
		r.Headroom = headroom
		l.metrics.setHeadroom(headroom)
	}
	r.Events = l.events.report(ctx, r.StuckNodes, awsNodeFindings(all, o))
	logger.V(1).Info("Check run", "findings", len(all), "stuck", r.Stuck, "nodeGroups", len(headroom), "events", r.Events, "result", r.Result, "duration", time.Since(start))
	return r
}

// findingKey is one series of nodekeeper_findings.
type findingKey struct{ Code, Severity string }

// countFindings counts the findings by code and severity; OK findings are none.
func countFindings(all []findings.Finding) map[findingKey]int {
	out := map[findingKey]int{}
	for _, f := range all {
		if f.Severity == findings.OK {
			continue
		}
		out[findingKey{f.Code, f.Severity.String()}]++
	}
	return out
}

// The values of nodekeeper_pods_stuck's cause label: the measured causes of doctor's NK743-NK747
// by code, and CauseUnmeasured for stuck pods whose node has none (its pod addresses do not come
// from the VPC CNI, or ipamd's figures were not read).
const (
	CausePoolFull          = "pool-full"
	CauseSubnet            = "subnet"
	CauseThrottled         = "throttled"
	CauseIPAMDUnreachable  = "ipamd-unreachable"
	CauseUnknown           = "unknown"
	CauseUnmeasured        = "unmeasured"
	nodeResourcePrefix     = "node/"
	stuckCauseEventsPrefix = "PodsStuck"
)

// causeByCode maps doctor's measured-cause rules to the cause label.
var causeByCode = map[string]string{
	doctor.RuleStuckPoolFull.Code:         CausePoolFull,
	doctor.RuleStuckSubnet.Code:           CauseSubnet,
	doctor.RuleStuckThrottled.Code:        CauseThrottled,
	doctor.RuleStuckIPAMDUnreachable.Code: CauseIPAMDUnreachable,
	doctor.RuleStuckUnknown.Code:          CauseUnknown,
}

// Causes are the values of the cause label, in a fixed order.
var Causes = []string{CausePoolFull, CauseSubnet, CauseThrottled, CauseIPAMDUnreachable, CauseUnknown, CauseUnmeasured}

// NodeCause is the measured cause of one node's stuck pods.
type NodeCause struct {
	Cause string
	// Pods is how many pods are stuck on the node.
	Pods int
	// Finding is doctor's finding that names the cause (its message and evidence), or nil for
	// CauseUnmeasured.
	Finding *findings.Finding
}

// stuckCauses gives each node with stuck pods its measured cause from doctor's NK743-NK747
// findings (resource node/NAME), and counts the stuck pods by cause.
func stuckCauses(f *doctor.Facts, all []findings.Finding) (map[string]NodeCause, map[string]int) {
	perNode := map[string]int{}
	for _, p := range f.Pods.Stuck {
		perNode[p.Node]++
	}
	nodes := make(map[string]NodeCause, len(perNode))
	for i := range all {
		fd := &all[i]
		cause, ok := causeByCode[fd.Code]
		name, isNode := strings.CutPrefix(fd.Resource, nodeResourcePrefix)
		if !ok || !isNode || fd.Severity == findings.Skipped || perNode[name] == 0 {
			continue
		}
		nodes[name] = NodeCause{Cause: cause, Pods: perNode[name], Finding: fd}
	}
	counts := make(map[string]int, len(Causes))
	for _, c := range Causes {
		counts[c] = 0
	}
	for name, n := range perNode {
		c, ok := nodes[name]
		if !ok {
			c = NodeCause{Cause: CauseUnmeasured, Pods: n}
			nodes[name] = c
		}
		counts[c.Cause] += n
	}
	return nodes, counts
}

// awsNodeFindings are the warnings and errors about the aws-node DaemonSet itself.
func awsNodeFindings(all []findings.Finding, o doctor.Options) []findings.Finding {
	resource := "daemonset/" + o.AWSNodeNamespace + "/" + o.AWSNodeName
	var out []findings.Finding
	for _, f := range all {
		if f.Resource == resource && f.Severity >= findings.Warning {
			out = append(out, f)
		}
	}
	return out
}

// Headroom is how many more nodes one node group can take before one limit breaks, as plan
// computes it for that group alone at today's settings.
type Headroom struct {
	NodeGroup string
	// Limit is plan's limit ID (plan.LimitSubnet, ...).
	Limit string
	// Nodes is plan's NodesFit: the most new nodes that stay within the limit.
	Nodes int
}

// headroom computes plan's limits for each node group of the facts' Nodes alone. A limit that
// sets no bound within the nodes plan simulates, or that is unknown (subnets without --aws), has
// no series.
func (l *Loop) headroom(ctx context.Context, f *doctor.Facts) ([]Headroom, error) {
	groups := nodeGroups(f.Nodes)
	if len(groups) == 0 {
		return nil, nil
	}
	reqs := make([]gather.Request, 0, len(groups))
	for _, g := range groups {
		// Each group grows by one node; plan follows the sequence past it to find each bound.
		// The kubelet's pull limits come from doctor's read of a member's configuration, else
		// the kubelet's defaults: plan's own read goes through the node proxy, which the
		// controller is never given.
		k := groupKubelet(f, g)
		reqs = append(reqs, gather.Request{Name: g, Nodegroup: g, Add: 1, Kubelet: &k})
	}
	in, err := l.deps.Reader.PlanInput(ctx, [2]string{l.opts.Doctor.AWSNodeNamespace, l.opts.Doctor.AWSNodeName}, reqs)
	if err != nil {
		return nil, fmt.Errorf("reading the node groups for plan: %w", err)
	}
	var out []Headroom
	var errs []error
	for _, g := range in.Groups {
		one := in
		one.Groups = []plan.Group{g}
		p, err := plan.Compute(one)
		if err != nil {
			errs = append(errs, fmt.Errorf("node group %s: %w", g.Name, err))
			continue
		}
		for _, lim := range p.Limits {
			if lim.Status == plan.StatusUnknown || lim.NodesFit < 0 {
				continue
			}
			out = append(out, Headroom{NodeGroup: g.Name, Limit: lim.ID, Nodes: lim.NodesFit})
		}
	}
	return out, errors.Join(errs...)
}

// groupKubelet is the pull limits of the first member of group whose kubelet configuration
// doctor read (--checks-kubelet-config), else the kubelet's defaults.
func groupKubelet(f *doctor.Facts, group string) plan.Kubelet {
	k := plan.DefaultKubelet()
	for i := range f.Nodes {
		n := &f.Nodes[i]
		c := f.Configz[n.Name].Config
		if nodeGroup(n) != group || c == nil {
			continue
		}
		if c.RegistryPullQPS != nil {
			k.RegistryPullQPS = int(*c.RegistryPullQPS)
		}
		if c.RegistryBurst != nil {
			k.RegistryBurst = int(*c.RegistryBurst)
		}
		k.Source = "the kubelet configuration of " + n.Name
		break
	}
	return k
}

// nodeGroup is the node group n belongs to, as plan names it: the EKS, eksctl or Karpenter
// label, in that order.
func nodeGroup(n *corev1.Node) string {
	for _, label := range []string{rules.LabelEKSNodegroup, rules.LabelEksctlNodegroup, rules.LabelKarpenterNodePool} {
		if v := n.Labels[label]; v != "" {
			return v
		}
	}
	return ""
}

// nodeGroups are the node groups (EKS, eksctl or Karpenter) the Nodes belong to, sorted, each
// with an instance type plan can start from.
func nodeGroups(nodes []corev1.Node) []string {
	seen := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		if g := nodeGroup(n); g != "" && n.Labels[corev1.LabelInstanceTypeStable] != "" {
			seen[g] = true
		}
	}
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return slices.Clip(out)
}

// RunBeside runs the loop (when not nil) beside main, the lease controller's Run: main never
// waits for a check run, and when main returns the loop is stopped and waited for, so that
// neither outlives the other. It returns main's error.
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
