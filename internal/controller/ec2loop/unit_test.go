package ec2loop_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekeeper/nodekeeper/internal/controller/ec2loop"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func tagged(id, dns string, launched time.Time, tags ...string) ec2types.Instance {
	inst := ec2types.Instance{InstanceId: &id, PrivateDnsName: &dns, LaunchTime: &launched, InstanceType: "m6i.large",
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}}
	tags = append([]string{"kubernetes.io/cluster/prod", "owned"}, tags...)
	for i := 0; i+1 < len(tags); i += 2 {
		inst.Tags = append(inst.Tags, ec2types.Tag{Key: &tags[i], Value: &tags[i+1]})
	}
	return inst
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

type rig struct {
	cloud    *awsfake.Cloud
	clock    *clocktesting.FakeClock
	recorder *events.FakeRecorder
	reg      *prometheus.Registry
	loop     *ec2loop.Loop
	client   *fake.Clientset
	leading  atomic.Bool
}

func newRig(t *testing.T, nodes ...*corev1.Node) *rig {
	t.Helper()
	r := &rig{cloud: awsfake.New(), clock: clocktesting.NewFakeClock(epoch), recorder: events.NewFakeRecorder(1000), reg: prometheus.NewRegistry()}
	r.leading.Store(true)
	var objs []corev1.Node
	for _, n := range nodes {
		objs = append(objs, *n)
	}
	r.client = fake.NewClientset()
	for i := range objs {
		if _, err := r.client.CoreV1().Nodes().Create(context.Background(), &objs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	r.loop, err = ec2loop.New(ec2loop.Deps{EC2: r.cloud, Client: r.client, Recorder: r.recorder, Clock: r.clock, Leading: r.leading.Load},
		ec2loop.Options{Cluster: "prod", Registry: r.reg, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	s, err := promscrape.Gather(r.reg)
	if err != nil {
		t.Fatal(err)
	}
	return promscrape.Sum(s, name, labels...)
}

// drain returns the events recorded so far.
func (r *rig) drain() []string {
	var out []string
	for {
		select {
		case e := <-r.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func ids(orphans []instances.Orphan) string {
	var s []string
	for _, o := range orphans {
		s = append(s, o.ID())
	}
	return strings.Join(s, ",")
}

// TestScan: one scan reports the running instances of the cluster that no Node stands for,
// oldest first, in the gauges and in one Warning Event each; instances with a Node (by
// providerID or by name), still registering, or of another cluster are not reported.
func TestScan(t *testing.T) {
	r := newRig(t,
		node("ip-10-0-0-1.ec2.internal", "aws:///us-east-1a/i-joined"),
		node("ip-10-0-0-2.ec2.internal", ""),
	)
	r.cloud.Instances = []ec2types.Instance{
		tagged("i-joined", "ip-10-0-0-1.ec2.internal", epoch.Add(-time.Hour)),
		tagged("i-by-name", "ip-10-0-0-2.ec2.internal", epoch.Add(-time.Hour)),
		tagged("i-young", "ip-10-0-0-3.ec2.internal", epoch.Add(-5*time.Minute)),
		tagged("i-orphan", "ip-10-0-0-4.ec2.internal", epoch.Add(-2*time.Hour), "eks:nodegroup-name", "ng-\x1b[31mred"),
		tagged("i-older", "ip-10-0-0-5.ec2.internal", epoch.Add(-26*time.Hour), "karpenter.sh/nodepool", "default"),
	}
	other := tagged("i-other-cluster", "ip-10-9-0-1.ec2.internal", epoch.Add(-time.Hour))
	other.Tags = []ec2types.Tag{{Key: ptr("kubernetes.io/cluster/staging"), Value: ptr("owned")}}
	r.cloud.Instances = append(r.cloud.Instances, other)

	s := r.loop.ScanOnce(context.Background())
	if s.Err != nil || s.Result != ec2loop.ResultSuccess {
		t.Fatalf("scan: %s %v", s.Result, s.Err)
	}
	if got := ids(s.WithoutNode); got != "i-older,i-orphan" {
		t.Errorf("without Node: %s, want i-older,i-orphan", got)
	}
	if s.Running != 5 || s.Nodes != 2 || s.Calls != 3 {
		t.Errorf("running %d, nodes %d, calls %d; want 5, 2, 3", s.Running, s.Nodes, s.Calls)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"nodekeeper_instances_without_node", nil, 2},
		{"nodekeeper_instances_without_node_oldest_seconds", nil, (26 * time.Hour).Seconds()},
		{"nodekeeper_instance_scans_total", []string{"result", "success"}, 1},
		{"nodekeeper_instance_scans_total", []string{"result", "denied"}, 0},
		{"nodekeeper_instance_scan_calls_total", nil, 3},
	} {
		if got := r.metric(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	evs := r.drain()
	if len(evs) != 2 {
		t.Fatalf("events: %q, want 2", evs)
	}
	for _, want := range []string{"Warning InstanceWithoutNode EC2 instance i-older (m6i.large) has been running for 26h0m0s", "Karpenter nodepool default"} {
		if !strings.Contains(evs[0], want) {
			t.Errorf("first event %q lacks %q", evs[0], want)
		}
	}
	if strings.Contains(evs[1], "\x1b") || !strings.Contains(evs[1], `node group ng-\x1b[31mred`) {
		t.Errorf("a tag's control characters must be escaped in the event: %q", evs[1])
	}
}

// TestReportedOnce: an instance is reported once while it stays without a Node, again after it
// had a Node and lost it; a replica that does not lead scans nothing (no EC2 call, no Event) and
// exports 0;
// no scan records more than MaxEventsPerScan Events, and the rest follow in later scans.
func TestReportedOnce(t *testing.T) {
	r := newRig(t)
	r.cloud.Instances = []ec2types.Instance{tagged("i-a", "ip-a", epoch.Add(-time.Hour))}
	ctx := context.Background()
	steps := []struct {
		name       string
		before     func()
		wantEvents int
		wantGauge  float64
	}{
		{"first seen", nil, 1, 1},
		{"seen again", nil, 0, 1},
		{"its Node registers", func() {
			if _, err := r.client.CoreV1().Nodes().Create(ctx, node("ip-a", "aws:///us-east-1a/i-a"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 0, 0},
		{"its Node is deleted", func() {
			if err := r.client.CoreV1().Nodes().Delete(ctx, "ip-a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1, 1},
		{"a standby replica", func() {
			r.leading.Store(false)
			r.cloud.Instances = append(r.cloud.Instances, tagged("i-b", "ip-b", epoch.Add(-time.Hour)))
		}, 0, 0},
		{"many at once on the leader", func() {
			r.leading.Store(true)
			for i := range ec2loop.MaxEventsPerScan + 10 {
				r.cloud.Instances = append(r.cloud.Instances, tagged(fmt.Sprintf("i-many-%03d", i), fmt.Sprintf("ip-many-%03d", i), epoch.Add(-time.Hour)))
			}
		}, ec2loop.MaxEventsPerScan, 2 + ec2loop.MaxEventsPerScan + 10},
		{"the rest", nil, 11, 2 + ec2loop.MaxEventsPerScan + 10},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		calls := r.cloud.Calls(instances.PermDescribeInstances)
		s := r.loop.ScanOnce(ctx)
		if s.Err != nil {
			t.Fatalf("%s: %v", st.name, s.Err)
		}
		if standby := !r.leading.Load(); standby != (r.cloud.Calls(instances.PermDescribeInstances) == calls) || standby != (s.Result == ec2loop.ResultStandby) {
			t.Errorf("%s: leading %v, result %q, EC2 called %d times: only the leader scans", st.name, !standby, s.Result, r.cloud.Calls(instances.PermDescribeInstances)-calls)
		}
		if got := len(r.drain()); got != st.wantEvents || s.Events != st.wantEvents {
			t.Errorf("%s: %d events recorded (scan says %d), want %d", st.name, got, s.Events, st.wantEvents)
		}
		if got := r.metric(t, "nodekeeper_instances_without_node"); got != st.wantGauge {
			t.Errorf("%s: gauge %g, want %g", st.name, got, st.wantGauge)
		}
	}
}

// TestScanFailures: a denied, throttled, hanging or failing EC2 fails the scan with its kind
// counted, within the scan's deadline, and leaves the gauges at the last successful scan's.
func TestScanFailures(t *testing.T) {
	var clk *clocktesting.FakeClock
	for _, tc := range []struct {
		name   string
		break_ func(r *rig)
		result string
	}{
		{"denied", func(r *rig) { r.cloud.Deny[instances.PermDescribeInstances] = true }, instances.FailureDenied},
		{"throttled", func(r *rig) {
			r.cloud.SetBefore(func(_ context.Context, p string) error { return awsfake.Throttled(p) })
		}, instances.FailureThrottled},
		{"never answers", func(r *rig) {
			r.cloud.SetBefore(func(ctx context.Context, p string) error {
				clk.Step(time.Minute + time.Second) // past the scan's deadline, on the loop's clock
				return awsfake.Hang(ctx, p)
			})
		}, instances.FailureOther},
		{"fails otherwise", func(r *rig) {
			r.cloud.SetBefore(func(context.Context, string) error { return errors.New("connection reset by peer") })
		}, instances.FailureOther},
		// EC2 answers but the Node LIST fails: no comparison against a missing Node list.
		{"node list fails", func(r *rig) {
			r.client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
			})
		}, instances.FailureOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			clk = r.clock
			r.cloud.Instances = []ec2types.Instance{tagged("i-a", "ip-a", epoch.Add(-time.Hour))}
			if s := r.loop.ScanOnce(context.Background()); s.Err != nil {
				t.Fatal(s.Err)
			}
			r.drain()
			tc.break_(r)
			s := r.loop.ScanOnce(context.Background())
			if s.Err == nil || s.Result != tc.result || (tc.name == "never answers" && !strings.Contains(s.Err.Error(), "deadline of 1m0s")) {
				t.Fatalf("scan result %q (%v), want %q", s.Result, s.Err, tc.result)
			}
			if got := r.metric(t, "nodekeeper_instance_scans_total", "result", tc.result); got != 1 {
				t.Errorf("scans{result=%q} = %g, want 1", tc.result, got)
			}
			if got := r.metric(t, "nodekeeper_instances_without_node"); got != 1 {
				t.Errorf("the gauge must keep the last successful scan's 1, got %g", got)
			}
			if evs := r.drain(); len(evs) != 0 {
				t.Errorf("a failed scan recorded events: %q", evs)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	cloud, client, reg := awsfake.New(), fake.NewClientset(), prometheus.NewRegistry()
	for _, tc := range []struct {
		name string
		deps ec2loop.Deps
		opts ec2loop.Options
		want string
	}{
		{"no EC2", ec2loop.Deps{Client: client}, ec2loop.Options{Cluster: "c", Registry: reg}, "EC2 client"},
		{"no cluster", ec2loop.Deps{EC2: cloud, Client: client}, ec2loop.Options{Cluster: " ", Registry: reg}, "cluster name"},
		{"no registry", ec2loop.Deps{EC2: cloud, Client: client}, ec2loop.Options{Cluster: "c"}, "registry"},
		{"negative interval", ec2loop.Deps{EC2: cloud, Client: client}, ec2loop.Options{Cluster: "c", Registry: reg, Interval: -1}, "negative"},
	} {
		if _, err := ec2loop.New(tc.deps, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %s", tc.name, err, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestNewLeaderScansAtOnce: a replica that does not lead yet (every replica at start-up, before
// its caches sync and it wins the election) does not scan, and scans within StandbyRecheck of
// leading, not an Interval (5 minutes by default) later.
func TestNewLeaderScansAtOnce(t *testing.T) {
	r := newRig(t)
	r.leading.Store(false)
	scans := make(chan ec2loop.Scan, 100)
	loop, err := ec2loop.New(ec2loop.Deps{EC2: r.cloud, Client: r.client, Clock: r.clock, Leading: r.leading.Load},
		ec2loop.Options{Cluster: "prod", Registry: prometheus.NewRegistry(), OnScan: func(s ec2loop.Scan) { scans <- s }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	next := func() ec2loop.Scan {
		t.Helper()
		select {
		case s := <-scans:
			return s
		case <-time.After(time.Minute): // only ends a test that already failed
			t.Fatal("no scan")
			return ec2loop.Scan{}
		}
	}
	if s := next(); s.Result != ec2loop.ResultStandby || r.cloud.Calls(instances.PermDescribeInstances) != 0 {
		t.Fatalf("before leading: %q with %d EC2 calls", s.Result, r.cloud.Calls(instances.PermDescribeInstances))
	}
	r.leading.Store(true)
	for !r.clock.HasWaiters() {
		goruntime.Gosched() // the loop is about to wait
	}
	r.clock.Step(ec2loop.StandbyRecheck)
	if s := next(); s.Result != ec2loop.ResultSuccess {
		t.Errorf("after leading and %s: %q, want a scan", ec2loop.StandbyRecheck, s.Result)
	}
}
