package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// These are unit tests of the controller's state machine: one lease at a time through sync and
// the worker, with client-go's fake clientset and metadata client, a fake clock and a fake event
// recorder. The informers are not run; the test puts leases and Nodes into their caches as the
// informers would (through the same transform). The same behaviour is proven against a real API
// server by the control-plane tests (controller_test.go); these pin the decisions themselves,
// fast and exactly.

var unitNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const unitGrace = time.Hour

// rig is one controller wired to fakes.
type rig struct {
	t         *testing.T
	c         *Controller
	client    *fake.Clientset
	meta      *metadatafake.FakeMetadataClient
	clock     *clocktesting.FakeClock
	recorder  *events.FakeRecorder
	decisions []Decision
}

// newRig builds a controller whose caches and API hold leases, and Nodes named nodes.
func newRig(t *testing.T, opts Options, leases []*coordinationv1.Lease, nodes ...string) *rig {
	t.Helper()
	r := &rig{t: t, clock: clocktesting.NewFakeClock(unitNow), recorder: events.NewFakeRecorder(100)}
	var objs []runtime.Object
	for _, l := range leases {
		objs = append(objs, l.DeepCopy())
	}
	r.client = fake.NewClientset(objs...)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var nodeObjs []runtime.Object
	for _, n := range nodes {
		nodeObjs = append(nodeObjs, unitNode(n))
	}
	r.meta = metadatafake.NewSimpleMetadataClient(scheme, nodeObjs...)
	opts.OnDecision = func(d Decision) { r.decisions = append(r.decisions, d) }
	if opts.GracePeriod == 0 {
		opts.GracePeriod = unitGrace
	}
	deps := Deps{
		Client:   r.client,
		Metadata: r.meta,
		Leases:   coordinationinformers.NewFilteredLeaseInformer(r.client, lease.NodeLeaseNamespace, 0, cache.Indexers{}, nil),
		Nodes:    metadatainformer.NewFilteredMetadataInformer(r.meta, kube.NodesResource, "", 0, cache.Indexers{}, nil).Informer(),
		Recorder: r.recorder,
		Clock:    r.clock,
	}
	c, err := New(deps, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	for _, l := range leases {
		r.cache(l)
	}
	for _, n := range nodes {
		if err := deps.Nodes.GetIndexer().Add(unitNode(n)); err != nil {
			t.Fatal(err)
		}
	}
	c.synced.Store(true)
	return r
}

// cache puts l into the lease cache as the informer would (through the controller's transform).
func (r *rig) cache(l *coordinationv1.Lease) {
	r.t.Helper()
	obj, err := compactLease(l.DeepCopy())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.c.deps.Leases.GetIndexer().Update(obj); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) sync(name string) (result, error) {
	r.t.Helper()
	return r.c.sync(context.Background(), name)
}

// events hands the queued events to the fake recorder (Run's pacing loop is not running) and
// returns them as "Type Reason note".
func (r *rig) events() []string {
	var out []string
	for {
		select {
		case f := <-r.c.events.queue:
			f()
			out = append(out, <-r.recorder.Events)
		default:
			return out
		}
	}
}

// writes are the DELETEs and PATCHes sent to the fake API.
func (r *rig) writes() []string {
	var out []string
	for _, a := range r.client.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "patch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func (r *rig) outcomes() []deleter.Outcome {
	var out []deleter.Outcome
	for _, d := range r.decisions {
		out = append(out, d.Outcome)
	}
	return out
}

func unitNode(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name)},
	}
}

// unitLease is a kubelet lease created created ago and renewed renewed ago (40 s duration),
// owned by its Node when owned.
func unitLease(name string, created, renewed time.Duration, owned bool) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: lease.NodeLeaseNamespace, UID: types.UID("lease-" + name), ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(unitNow.Add(-created)),
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(unitNow.Add(-renewed))),
		},
	}
	if owned {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID("node-" + name)}}
	}
	return l
}

// TestEachClassAction drives one lease of each class through sync: only a leaked lease is
// deleted, only an unowned one (old enough) adopted, a zombie reported, the rest left alone and
// requeued for the exact moment their class would change by time alone.
func TestEachClassAction(t *testing.T) {
	const n = "ip-10-0-0-1.ec2.internal"
	tests := []struct {
		name      string
		lease     *coordinationv1.Lease
		node      bool
		opts      Options
		class     lease.Class
		writes    []string
		outcomes  []deleter.Outcome
		event     string        // reason of the one event expected, "" for none
		requeueIn time.Duration // result.after
	}{
		{name: "leaked is deleted", lease: unitLease(n, 3*time.Hour, 2*time.Hour, false),
			class: lease.Leaked, writes: []string{"delete leases"}, outcomes: []deleter.Outcome{deleter.Deleted}, event: ReasonDeleted},
		{name: "unowned is adopted once adopt-after has passed", lease: unitLease(n, time.Hour, time.Second, false), node: true,
			class: lease.Unowned, writes: []string{"patch leases"}, outcomes: []deleter.Outcome{deleter.Adopted}, event: ReasonAdopted},
		{name: "a new unowned lease is left to its kubelet until adopt-after", lease: unitLease(n, 10*time.Second, time.Second, false), node: true,
			class: lease.Unowned, requeueIn: DefaultAdoptAfter - 10*time.Second},
		{name: "zombie is reported, never deleted, and requeued for when it would leak", lease: unitLease(n, time.Hour, time.Second, false),
			class: lease.Zombie, event: ReasonZombie, requeueIn: unitGrace - time.Second},
		{name: "healthy is requeued for when it would go stale", lease: unitLease(n, time.Hour, 10*time.Second, true), node: true,
			class: lease.Healthy, requeueIn: 30 * time.Second},
		{name: "owner missing is the garbage collector's", lease: unitLease(n, time.Hour, 2*time.Hour, true),
			class: lease.OwnerMissing},
		{name: "stale is only counted", lease: unitLease(n, 3*time.Hour, 2*time.Hour, true), node: true,
			class: lease.Stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []string
			if tt.node {
				nodes = append(nodes, n)
			}
			r := newRig(t, tt.opts, []*coordinationv1.Lease{tt.lease}, nodes...)
			res, err := r.sync(n)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.c.state[n].class(); got != tt.class {
				t.Fatalf("class %s, want %s", got, tt.class)
			}
			if got := r.writes(); strings.Join(got, ",") != strings.Join(tt.writes, ",") {
				t.Errorf("writes %v, want %v", got, tt.writes)
			}
			if got := r.outcomes(); len(got) != len(tt.outcomes) || (len(got) > 0 && got[0] != tt.outcomes[0]) {
				t.Errorf("decisions %v, want %v", got, tt.outcomes)
			}
			evs := r.events()
			switch {
			case tt.event == "" && len(evs) > 0:
				t.Errorf("events %q, want none", evs)
			case tt.event != "" && (len(evs) != 1 || !strings.Contains(evs[0], " "+tt.event+" ")):
				t.Errorf("events %q, want one %s", evs, tt.event)
			}
			if res.retry || res.after != tt.requeueIn {
				t.Errorf("result %+v, want requeue in %s and no retry", res, tt.requeueIn)
			}
		})
	}
}

// TestDryRunReportsEachVersionOnce: a dry run decides, reports and counts, sends no DELETE, and
// reports the same lease version only once; a new version is decided again.
func TestDryRunReportsEachVersionOnce(t *testing.T) {
	const n = "ip-10-0-0-2.ec2.internal"
	l := unitLease(n, 3*time.Hour, 2*time.Hour, false)
	r := newRig(t, Options{DryRun: true}, []*coordinationv1.Lease{l})
	for range 2 {
		if _, err := r.sync(n); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.outcomes(); len(got) != 1 || got[0] != deleter.WouldDelete {
		t.Errorf("decisions %v after two passes over one version, want one %s", got, deleter.WouldDelete)
	}
	if evs := r.events(); len(evs) != 1 || !strings.Contains(evs[0], ReasonWouldDelete) {
		t.Errorf("events %q, want one %s", evs, ReasonWouldDelete)
	}
	l.ResourceVersion = "8"
	r.cache(l)
	if _, err := r.sync(n); err != nil {
		t.Fatal(err)
	}
	if got := r.outcomes(); len(got) != 2 {
		t.Errorf("decisions %v, want the new version decided again", got)
	}
	if w := r.writes(); len(w) != 0 {
		t.Errorf("dry run sent %v", w)
	}
	if got := gathered(t, r, "nodekeeper_lease_deletions_total", resultDryRun); got != 2 {
		t.Errorf("dry_run deletions counted %v, want 2", got)
	}
}

// TestZombieReportedOnceAfterReportDelay: a zombie lease is not reported while it is younger
// than zombie-report-after (a kubelet registering its Node), then exactly once, whatever the
// number of passes; an expired zombie (its kubelet stopped) is not reported at all.
func TestZombieReportedOnceAfterReportDelay(t *testing.T) {
	const n, stopped = "ip-10-0-0-3.ec2.internal", "ip-10-0-0-4.ec2.internal"
	r := newRig(t, Options{}, []*coordinationv1.Lease{
		unitLease(n, 10*time.Second, time.Second, false),
		unitLease(stopped, time.Hour, 5*time.Minute, false),
	})
	res, err := r.sync(n)
	if err != nil {
		t.Fatal(err)
	}
	if evs := r.events(); len(evs) != 0 || res.after != DefaultZombieReportAfter-10*time.Second {
		t.Fatalf("young zombie: events %q, requeue in %s; want none, requeue at zombie-report-after", evs, res.after)
	}
	r.clock.Step(DefaultZombieReportAfter)
	renewed := unitLease(n, 10*time.Second, time.Second, false)
	renewed.Spec.RenewTime = ptr.To(metav1.NewMicroTime(r.clock.Now().Add(-time.Second)))
	renewed.ResourceVersion = "8"
	r.cache(renewed)
	for range 3 {
		if _, err := r.sync(n); err != nil {
			t.Fatal(err)
		}
	}
	if evs := r.events(); len(evs) != 1 || !strings.Contains(evs[0], ReasonZombie) {
		t.Errorf("events %q after three passes, want one %s", evs, ReasonZombie)
	}
	if _, err := r.sync(stopped); err != nil {
		t.Fatal(err)
	}
	if got := r.c.state[stopped].class(); got != lease.Zombie {
		t.Fatalf("stopped kubelet's lease is %s, want zombie", got)
	}
	if evs := r.events(); len(evs) != 0 {
		t.Errorf("expired zombie reported: %q", evs)
	}
	if got := gathered(t, r, "nodekeeper_zombie_kubelets_detected_total", ""); got != 1 {
		t.Errorf("zombies counted %v, want 1", got)
	}
	if w := r.writes(); len(w) != 0 {
		t.Errorf("zombie leases written: %v", w)
	}
}

// runWorker runs the controller's real worker on a queue driven by the rig's fake clock, and
// returns a function that queues a key and waits until the worker has finished an item.
func runWorker(t *testing.T, r *rig) (workqueue.TypedRateLimitingInterface[string], func(name string)) {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "unit", Clock: r.clock})
	ctx, cancel := context.WithCancel(context.Background())
	go r.c.work(ctx, q)
	t.Cleanup(func() { cancel(); q.ShutDown() })
	return q, func(name string) {
		t.Helper()
		q.Add(name)
		<-r.c.progress
	}
}

// TestRetryWithBackoff: a safety check that stopped an action, and an API error, are retried
// through the rate limiter (backoff), never dropped and never acted on blindly.
func TestRetryWithBackoff(t *testing.T) {
	const (
		nodeBack = "ip-10-0-1-1.ec2.internal" // leaked in the cache, but the live GET finds the Node
		failing  = "ip-10-0-1-2.ec2.internal" // leaked; its DELETE fails with a server error
	)
	r := newRig(t, Options{}, []*coordinationv1.Lease{
		unitLease(nodeBack, 3*time.Hour, 2*time.Hour, false),
		unitLease(failing, 3*time.Hour, 2*time.Hour, false),
	})
	// The Node of nodeBack exists on the server but not (yet) in the cache.
	if _, err := r.meta.Resource(kube.NodesResource).(metadatafake.MetadataClient).CreateFake(unitNode(nodeBack), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.client.PrependReactor("delete", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.DeleteAction).GetName() == failing {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is unhappy"))
		}
		return false, nil, nil
	})
	q, process := runWorker(t, r)
	process(nodeBack)
	process(failing)
	if got := q.NumRequeues(nodeBack); got != 1 {
		t.Errorf("%s (safety check stopped the delete): %d rate-limited requeues, want 1", nodeBack, got)
	}
	if got := q.NumRequeues(failing); got != 1 {
		t.Errorf("%s (API error): %d rate-limited requeues, want 1", failing, got)
	}
	if w := r.writes(); len(w) != 1 || w[0] != "delete leases" {
		t.Errorf("writes %v, want only the failed DELETE (none for the lease whose Node came back)", w)
	}
	if evs := r.events(); len(evs) != 1 || !strings.Contains(evs[0], ReasonActionFailed) {
		t.Errorf("events %q, want one %s", evs, ReasonActionFailed)
	}
	if got := gathered(t, r, "nodekeeper_lease_deletions_total", resultPrecondition); got != 1 {
		t.Errorf("precondition_failed deletions %v, want 1", got)
	}
	if got := gathered(t, r, "nodekeeper_lease_deletions_total", resultError); got != 1 {
		t.Errorf("error deletions %v, want 1", got)
	}
}

// TestRequeueAtDeadline: a lease whose class changes by time alone is not retried; it is
// requeued for exactly the moment of the change, on the injected clock, and not a moment before.
func TestRequeueAtDeadline(t *testing.T) {
	const healthy = "ip-10-0-1-3.ec2.internal" // renewed 10 s ago with a 40 s duration: stale in 30 s
	r := newRig(t, Options{}, []*coordinationv1.Lease{unitLease(healthy, time.Hour, 10*time.Second, true)}, healthy)
	q, process := runWorker(t, r)
	process(healthy)
	if got := q.NumRequeues(healthy); got != 0 {
		t.Errorf("healthy lease: %d rate-limited requeues, want 0", got)
	}
	// The work queue reports to the controller's registry (workqueue.SetProvider).
	if got := gathered(t, r, "workqueue_adds_total", "unit"); got < 1 {
		t.Errorf("workqueue_adds_total{name=\"unit\"} = %v, want at least 1", got)
	}
	synced := syncCount(t, r)
	// Only a timer of the fake clock can bring the lease back, so a step short of the deadline
	// cannot; a key the worker drops at once lets anything that was due go first.
	r.clock.Step(30*time.Second - time.Millisecond)
	process("not-a-lease")
	if got := syncCount(t, r); got != synced {
		t.Errorf("%s re-classified before its deadline", healthy)
	}
	r.clock.Step(time.Millisecond)
	<-r.c.progress // the worker ran it again, at the deadline
	if got := r.c.state[healthy].class(); got != lease.Stale {
		t.Errorf("%s at its deadline is %s, want stale", healthy, got)
	}
}

// syncCount is how many leases the controller has classified (the decision histogram's count).
func syncCount(t *testing.T, r *rig) uint64 {
	t.Helper()
	return uint64(gathered(t, r, "nodekeeper_decision_duration_seconds", ""))
}

// gathered is the value of the series of name (with label value label, if given) in the
// controller's registry: a counter's value, or a histogram's sample count.
func gathered(t *testing.T, r *rig, name, label string) float64 {
	t.Helper()
	families, err := r.c.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s{%s}", name, label)
	return 0
}
