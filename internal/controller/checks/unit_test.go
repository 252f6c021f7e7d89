package checks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/ipamdmetrics"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
)

// Unit tests of the loop over hand-built facts (a fake Reader): what becomes of doctor's
// findings, the measured causes and plan's limits in the gauges and Events. The reads themselves
// are tested on the real control plane (cluster_test.go).

// fakeReader hands out facts built by the test, counting the reads.
type fakeReader struct {
	facts     func() *doctor.Facts
	plan      func(reqs []gather.Request) (plan.Input, error)
	factReads atomic.Int32
	planReqs  [][]gather.Request
}

func (r *fakeReader) Facts(_ context.Context, o doctor.Options) (*doctor.Facts, error) {
	r.factReads.Add(1)
	f := r.facts()
	f.Settings, f.Now = o.WithDefaults().Settings(), o.Now()
	return f, nil
}

func (r *fakeReader) Checks(o doctor.Options) []doctor.Check {
	return doctor.ChecksFor(o, doctor.Deps{})
}

func (r *fakeReader) PlanInput(_ context.Context, awsNode [2]string, reqs []gather.Request) (plan.Input, error) {
	if awsNode != [2]string{"kube-system", "aws-node"} {
		return plan.Input{}, fmt.Errorf("plan asked for the aws-node DaemonSet %v", awsNode)
	}
	r.planReqs = append(r.planReqs, reqs)
	if r.plan == nil {
		return plan.Input{}, errors.New("no plan input in this test")
	}
	return r.plan(reqs)
}

var now = time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)

func readyNode(name, group string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"eks.amazonaws.com/nodegroup": group, corev1.LabelInstanceTypeStable: "t3.small"}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("11")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// subnetFacts: node-a's ipamd reports EC2 refusing addresses for lack of free ones in the subnet
// (NK744) and stuck pods, node-b is healthy; with fixed, nothing is stuck any more.
func subnetFacts(stuck int) func() *doctor.Facts {
	return func() *doctor.Facts {
		f := &doctor.Facts{
			Nodes:   []corev1.Node{readyNode("node-a", "mng-a"), readyNode("node-b", "mng-a")},
			AWSNode: doctor.AWSNodeFacts{Resource: "daemonset/kube-system/aws-node", Found: true, Container: true},
			Configz: map[string]clusterread.ConfigzResult{},
			Pods:    doctor.PodFacts{VPCPods: map[string]int{}, Stuck: map[string]*doctor.StuckPod{}},
			CNI: doctor.CNIFacts{Nodes: map[string]*doctor.CNINode{
				"node-a": {Pod: "kube-system/aws-node-a", Ready: true, Metrics: &doctor.IPAMDMetrics{Figures: ipamdmetrics.Figures{HasPool: true, TotalIPs: 3, AssignedIPs: 3, MaxIPs: 9, ENIs: 1, MaxENIs: 3, NoAddress: 5,
					EC2Errors: map[string]int{"InsufficientFreeAddressesInSubnet": 6}}}},
				"node-b": {Pod: "kube-system/aws-node-b", Ready: true, Metrics: &doctor.IPAMDMetrics{Figures: ipamdmetrics.Figures{HasPool: true, TotalIPs: 6, AssignedIPs: 2, MaxIPs: 9, ENIs: 2, MaxENIs: 3}}},
			}},
		}
		for i := range stuck {
			name := "api-" + string(rune('0'+i))
			f.Pods.Stuck["team/"+name] = &doctor.StuckPod{Namespace: "team", Name: name, Node: "node-a", Since: now.Add(-20 * time.Minute)}
		}
		return f
	}
}

// value is a gauge's value.
func value(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// series counts what c exports.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

type harness struct {
	loop     *Loop
	reader   *fakeReader
	recorder *events.FakeRecorder
	reg      *prometheus.Registry
	leading  atomic.Bool
	clock    *clocktesting.FakeClock
	t        *testing.T
}

func newHarness(t *testing.T, r *fakeReader) *harness {
	t.Helper()
	h := &harness{reader: r, recorder: events.NewFakeRecorder(100), reg: prometheus.NewRegistry(), clock: clocktesting.NewFakeClock(now), t: t}
	h.leading.Store(true)
	var err error
	h.loop, err = New(Deps{Reader: r, Recorder: h.recorder, Leading: h.leading.Load, Clock: h.clock},
		Options{Registry: h.reg, Doctor: doctor.Options{SkipPodNetworking: false}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) stuck(cause string) float64 {
	return value(h.t, h.loop.metrics.stuck.WithLabelValues(cause))
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestStuckCauseGaugeAndEventOncePerCause(t *testing.T) {
	stuck := 3
	r := &fakeReader{facts: func() *doctor.Facts { return subnetFacts(stuck)() }}
	h := newHarness(t, r)
	ctx := context.Background()

	run := h.loop.RunOnce(ctx)
	if run.Result != ResultPartial { // no plan input in this test
		t.Errorf("result %s (%v), want %s", run.Result, run.Err, ResultPartial)
	}
	if got := h.stuck(CauseSubnet); got != 3 {
		t.Errorf("nodekeeper_pods_stuck{cause=subnet} = %v, want 3 (stuck %v, nodes %v)", got, run.Stuck, run.StuckNodes)
	}
	for _, c := range Causes {
		if c != CauseSubnet && h.stuck(c) != 0 {
			t.Errorf("nodekeeper_pods_stuck{cause=%s} = %v, want 0", c, h.stuck(c))
		}
	}
	if got := value(t, h.loop.metrics.findings.WithLabelValues("NK744", "error")); got != 1 {
		t.Errorf(`nodekeeper_findings{code="NK744",severity="error"} = %v, want 1`, got)
	}
	evs := h.drainEvents()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning PodsStuck Cause subnet (NK744): 3 pods stuck in ContainerCreating") {
		t.Fatalf("events %q, want one Warning PodsStuck naming the subnet cause", evs)
	}

	// The cause lasts: no second Event.
	h.loop.RunOnce(ctx)
	if evs := h.drainEvents(); len(evs) != 0 {
		t.Errorf("a lasting cause was reported again: %q", evs)
	}
	// Fixed: the gauge falls to 0 and the cause is forgotten; when it comes back, it is reported again.
	stuck = 0
	h.loop.RunOnce(ctx)
	if got := h.stuck(CauseSubnet); got != 0 {
		t.Errorf("after the fix nodekeeper_pods_stuck{cause=subnet} = %v, want 0", got)
	}
	stuck = 2
	h.loop.RunOnce(ctx)
	if evs := h.drainEvents(); len(evs) != 1 {
		t.Errorf("a cause that came back gave %d Events, want 1: %q", len(evs), evs)
	}
}

// A standby reads nothing and exports no finding: a former leader's gauges would go stale.
func TestOnlyTheLeaderChecks(t *testing.T) {
	r := &fakeReader{facts: subnetFacts(3)}
	h := newHarness(t, r)
	h.leading.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.loop.Run(ctx); close(done) }()
	// Run checks once at start, then at each tick; wait for the ticker to exist, tick, and stop.
	for !h.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	h.clock.Step(DefaultInterval)
	cancel()
	<-done
	if n := r.factReads.Load(); n != 0 {
		t.Errorf("a standby read the cluster %d times", n)
	}
	if n := series(h.loop.metrics.stuck); n != 0 {
		t.Errorf("a standby exports %d stuck-pod series", n)
	}

	// Leading: it checks; losing the lead clears what only the leader knows.
	h.leading.Store(true)
	h.loop.RunOnce(context.Background())
	if series(h.loop.metrics.findings) == 0 {
		t.Fatal("the leader exports no finding")
	}
	h.leading.Store(false)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	h.loop.Run(ctx) // one pass as a standby, then stops
	if n := series(h.loop.metrics.findings) + series(h.loop.metrics.stuck); n != 0 {
		t.Errorf("a replica that lost the lead still exports %d finding and stuck-pod series", n)
	}
}

// The headroom is plan's, computed for each node group alone, one series per bounded limit; the
// node groups asked for are those of the Nodes, each grown by one node.
func TestHeadroomPerNodeGroup(t *testing.T) {
	small, err := eni.Lookup("t3.small")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeReader{facts: subnetFacts(0), plan: func(reqs []gather.Request) (plan.Input, error) {
		in := plan.Input{Env: map[string]string{}, Subnets: map[string]plan.Subnet{"subnet-a": {ID: "subnet-a", Free: 40}}}
		for _, q := range reqs {
			in.Groups = append(in.Groups, plan.Group{Name: q.Name, Type: small, Add: q.Add, Kubelet: *q.Kubelet,
				Placements: []plan.Placement{{Zone: "us-west-2a", NodeSubnet: "subnet-a"}}})
		}
		return in, nil
	}}
	h := newHarness(t, r)
	run := h.loop.RunOnce(context.Background())
	if run.Result != ResultSuccess {
		t.Fatalf("result %s: %v", run.Result, run.Err)
	}
	if len(r.planReqs) != 1 || len(r.planReqs[0]) != 1 || r.planReqs[0][0].Nodegroup != "mng-a" || r.planReqs[0][0].Add != 1 {
		t.Fatalf("plan was asked for %+v, want node group mng-a grown by one node", r.planReqs)
	}
	// Without the subnet the same computation has no subnet bound: the gauge is plan's figure.
	in, _ := r.plan(r.planReqs[0])
	p, err := plan.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Limit(plan.LimitSubnet).NodesFit
	if want <= 0 {
		t.Fatalf("plan gives the subnet limit %d nodes; the test wants a bound", want)
	}
	if got := value(t, h.loop.metrics.headroom.WithLabelValues("mng-a", plan.LimitSubnet)); got != float64(want) {
		t.Errorf(`nodekeeper_scaleup_headroom_nodes{nodegroup="mng-a",limit="subnet-addresses"} = %v, want plan's %d`, got, want)
	}
	if got := value(t, h.loop.metrics.threshold); got != DefaultHeadroomAlert {
		t.Errorf("threshold gauge %v, want %d", got, DefaultHeadroomAlert)
	}
}

// TestNewLeaderChecksAtOnce: a replica that does not lead yet (every replica at start-up, before
// its caches sync and it wins the election) reads nothing, and checks within StandbyRecheck of
// leading, not an Interval (5 minutes by default) later.
func TestNewLeaderChecksAtOnce(t *testing.T) {
	r := &fakeReader{facts: subnetFacts(3)}
	h := newHarness(t, r)
	h.leading.Store(false)
	runs := make(chan Run, 10)
	h.loop.opts.OnRun = func(run Run) { runs <- run }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitTimer := func() {
		for !h.clock.HasWaiters() {
			time.Sleep(time.Millisecond) // the loop is about to wait
		}
	}
	// Standing by: each recheck reads nothing.
	for range 3 {
		waitTimer()
		h.clock.Step(StandbyRecheck)
	}
	waitTimer()
	if n := r.factReads.Load(); n != 0 {
		t.Fatalf("a standby read the cluster %d times", n)
	}
	h.leading.Store(true)
	h.clock.Step(StandbyRecheck)
	select {
	case run := <-runs:
		if n := r.factReads.Load(); n != 1 || run.Result == ResultError {
			t.Errorf("the new leader's run: %s (%v) after %d reads, want one read", run.Result, run.Err, n)
		}
	case <-time.After(time.Minute): // only ends a test that already failed
		t.Fatalf("no check run %s after leading (the interval is %s)", StandbyRecheck, DefaultInterval)
	}
}
