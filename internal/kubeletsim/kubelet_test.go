package kubeletsim_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// The package shares one control plane with the garbage collector and node lifecycle controller
// at their default settings, which the capacity benchmark needs to be meaningful.
//
// With NODEKEEPER_COST_PPROF set the API server serves /debug/pprof, and BenchmarkRenewalCost
// writes a CPU profile of its window there.
func TestMain(m *testing.M) {
	opts := testenv.Options{ControllerManager: true}
	if os.Getenv(costPprofEnv) != "" {
		opts.APIServerArgs = []string{"--profiling=true"}
	}
	testenv.Main(m, opts, &env)
}

// uniqueName gives each test its own node so tests never see each other's objects.
func uniqueName() string {
	return testenv.UniqueNodeName(200, "us-west-2.compute.internal")
}

func getLease(ctx context.Context, c kubernetes.Interface, name string) (*coordinationv1.Lease, error) {
	return c.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
}

// startKubelet starts a simulated kubelet with cfg on a new node (cfg.Name is set here); it
// stops when the test ends.
func startKubelet(t *testing.T, cfg kubeletsim.Config) *kubeletsim.Kubelet {
	t.Helper()
	cfg.Name = uniqueName()
	k, err := env.NewFleet(t).Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRegistrationAndLease(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	k := startKubelet(t, kubeletsim.Config{LeaseDurationSeconds: 8})
	name := k.Name()
	node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.UID != k.NodeUID() {
		t.Errorf("node UID %s, kubelet says %s", node.UID, k.NodeUID())
	}
	// Every label survived NodeRestriction; the stored object has the size of a real one.
	for key, v := range k.Config().NodeLabels() {
		if node.Labels[key] != v {
			t.Errorf("label %s = %q, want %q", key, node.Labels[key], v)
		}
	}
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", name).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 10_000 || len(raw) > 20_000 {
		t.Errorf("stored node is %d bytes, want 10–20 KB", len(raw))
	}
	t.Logf("stored node: %d bytes", len(raw))

	// The waits below are for events (the lease owned, renewed, the PUT recorded); their bound is
	// only how long a stuck run takes to fail, never a window the kubelet must meet: on a loaded
	// machine a renewal due every 2 s can come much later.
	l := env.WaitNodeLease(t, name, eventBound, "owner = node", testenv.OwnedByNode(node.UID))
	ref := l.OwnerReferences[0]
	if ref.APIVersion != "v1" || ref.Kind != "Node" || ref.Name != name || ref.Controller != nil || ref.BlockOwnerDeletion != nil {
		t.Errorf("ownerReference %+v, want exactly {v1 Node %s uid} like the kubelet's", ref, name)
	}
	if *l.Spec.HolderIdentity != name || *l.Spec.LeaseDurationSeconds != 8 {
		t.Errorf("lease spec %+v", l.Spec)
	}
	// It renews (every 2 s, a quarter of 8 s).
	first := l.Spec.RenewTime.Time
	env.WaitNodeLease(t, name, eventBound, "renewal", func(l *coordinationv1.Lease) bool {
		return l != nil && l.Spec.RenewTime.Time.After(first)
	})
	// The kubelet records a request when its answer is back, so the API server can store (and
	// this test see) the renewal before the PUT is in the kubelet's trace and stats: wait for it
	// there too.
	var leaseReqs []string
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, eventBound, true, func(context.Context) (bool, error) {
		leaseReqs = leaseRequests(k, name)
		return slices.Contains(leaseReqs, "PUT leases/N 200"), nil
	})
	if err != nil {
		t.Fatalf("the renewal stored, but no lease PUT in the kubelet's requests %q: %v", leaseReqs, err)
	}

	s := k.Stats()
	if s.NodeCreate != 1 || s.LeaseCreated != 1 || s.LeaseUpdate < 1 || s.NodeListWatch < 1 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
	// A modern kubelet creates its lease with a POST after looking up its Node, then renews
	// it with PUTs and nothing else.
	want := []string{"GET leases/N 404", "GET nodes/N 200", "POST leases 201", "PUT leases/N 200"}
	if len(leaseReqs) < len(want) || !slices.Equal(leaseReqs[:len(want)], want) {
		t.Fatalf("lease requests %q, want them to start with %q", leaseReqs, want)
	}
	for _, r := range leaseReqs[len(want):] {
		if r != "PUT leases/N 200" {
			t.Errorf("unexpected request %s while renewing", r)
		}
	}
}

// eventBound is how long a test waits for an event before it fails: long enough for a loaded
// machine, where a test waits for an event and never for a time window.
const eventBound = 2 * time.Minute

// leaseRequests are the kubelet's lease requests and lookups of its Node so far, its name as N.
func leaseRequests(k *kubeletsim.Kubelet, name string) []string {
	var out []string
	for _, r := range k.Requests(time.Time{}) {
		if s := r.String(); strings.Contains(s, "leases") || strings.HasPrefix(s, "GET nodes/") {
			out = append(out, strings.ReplaceAll(s, name, "N"))
		}
	}
	return out
}

// TestNodeGoneRequestSequence pins the exact requests each generation sends after its Node and
// lease are deleted — the signatures the audit command looks for.
func TestNodeGoneRequestSequence(t *testing.T) {
	tests := []struct {
		mode kubeletsim.Mode
		// want is the first renewal after the deletion, request by request.
		want []string
		// steady is one later renewal.
		steady    []string
		leaseBack bool
	}{
		{
			mode: kubeletsim.Legacy,
			want: []string{
				"PUT leases/%s 409",  // the cached lease's UID precondition fails
				"GET leases/%s 404",  // re-read
				"GET nodes/%s 404",   // no owner → no create
				"GET nodes/%s 404",   // the owner error is ignored...
				"PUT leases/%s 201"}, // ...and the lease is created through the update
			steady:    []string{"GET nodes/%s 404", "PUT leases/%s 200"},
			leaseBack: true,
		},
		{
			mode: kubeletsim.Modern,
			want: []string{
				"PUT leases/%s 409", "GET leases/%s 404", "GET nodes/%s 404",
				"GET nodes/%s 404", "GET nodes/%s 404", "GET nodes/%s 404", "GET nodes/%s 404", // retries, none written
				"GET leases/%s 404", "GET nodes/%s 404"}, // fallback to ensure lease
			steady: []string{"GET leases/%s 404", "GET nodes/%s 404"},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := env.AdminClient()
			name := uniqueName()
			// Node status syncs only at start, so that only lease traffic follows; 3 s renewals
			// leave room to delete both objects between two of them.
			k, err := env.NewFleet(t).Start(ctx, kubeletsim.Config{Name: name, Mode: tt.mode, LeaseDurationSeconds: 12, NodeStatusUpdateFrequency: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			l := env.WaitNodeLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))
			prev := l.Spec.RenewTime.Time
			env.WaitNodeLease(t, name, 10*time.Second, "a renewal", func(l *coordinationv1.Lease) bool {
				return l != nil && l.Spec.RenewTime.Time.After(prev)
			})
			// Right after a renewal: delete the lease, then the Node (nothing left for the GC).
			from := time.Now()
			if err := admin.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// Two more renewals.
			time.Sleep(2*k.Config().RenewInterval + k.Config().RenewInterval/2)
			got := k.Requests(from)
			var gotS []string
			for _, r := range got {
				gotS = append(gotS, r.String())
			}
			var want []string
			for _, w := range append(slices.Clone(tt.want), tt.steady...) {
				want = append(want, fmt.Sprintf(w, name))
			}
			if !slices.Equal(gotS, want) {
				t.Fatalf("requests after the deletion:\n got %q\nwant %q", gotS, want)
			}
			l, err = getLease(ctx, admin, name)
			switch {
			case tt.leaseBack && err != nil:
				t.Fatalf("legacy kubelet should have re-created its lease: %v", err)
			case tt.leaseBack && len(l.OwnerReferences) != 0:
				t.Fatalf("re-created lease has owners %v; the pre-1.29 leak has none", l.OwnerReferences)
			case !tt.leaseBack && !apierrors.IsNotFound(err):
				t.Fatalf("modern kubelet must not re-create its lease: %v %s", err, testenv.DescribeLease(l))
			}
		})
	}
}

func TestStopAndRestart(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	k := startKubelet(t, kubeletsim.Config{Mode: kubeletsim.Legacy, LeaseDurationSeconds: 4})
	name := k.Name()
	oldUID := k.NodeUID()
	env.WaitNodeLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(oldUID))

	k.Stop()
	k.Stop() // idempotent
	if k.Running() {
		t.Fatal("Running after Stop")
	}
	stopped := k.Stats()
	l, err := getLease(ctx, admin, name)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // more than two renew intervals
	after, err := getLease(ctx, admin, name)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Spec.RenewTime.Equal(l.Spec.RenewTime) {
		t.Errorf("a stopped kubelet renewed its lease: %v → %v", l.Spec.RenewTime, after.Spec.RenewTime)
	}
	if d := k.Stats().Sub(stopped); d.Total != 0 {
		t.Errorf("a stopped kubelet sent requests: %+v", d)
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the Node must survive a machine death: %v", err)
	}

	// While it is down its Node is deleted (the GC takes the lease) and a past leak's ownerless
	// lease takes the name: a restart re-registers the Node and adopts that lease.
	if err := admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitNodeLease(t, name, 30*time.Second, "GC deletes the lease", func(l *coordinationv1.Lease) bool { return l == nil })
	seeded, err := kubeletsim.SeedLeakedLease(ctx, admin, name, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if k.NodeUID() == oldUID || k.NodeUID() == "" {
		t.Fatalf("restart should register a new Node, UID %q (old %q)", k.NodeUID(), oldUID)
	}
	l = env.WaitNodeLease(t, name, 10*time.Second, "adopted by the new Node", testenv.OwnedByNode(k.NodeUID()))
	if l.UID != seeded.UID {
		t.Errorf("the kubelet should adopt the existing lease %s, got a new one %s", seeded.UID, l.UID)
	}
	if err := k.Restart(ctx); err != nil { // restart of a running kubelet
		t.Fatal(err)
	}
	if !k.Running() {
		t.Fatal("not running after Restart")
	}
}

func TestRecreateNode(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	k := startKubelet(t, kubeletsim.Config{LeaseDurationSeconds: 4})
	name := k.Name()
	env.WaitNodeLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))
	newUID, err := k.RecreateNode(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if newUID == k.NodeUID() {
		t.Fatal("re-created node kept its UID")
	}
	// The GC deletes the lease that names the old UID; the running kubelet creates a new one
	// owned by the new Node.
	env.WaitNodeLease(t, name, 30*time.Second, "owner = re-created node", testenv.OwnedByNode(newUID))
}

func TestSeedLeakedLease(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	name := uniqueName()
	renew := time.Now().Add(-72 * time.Hour).Truncate(time.Microsecond)
	l, err := kubeletsim.SeedLeakedLease(ctx, admin, name, renew)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.OwnerReferences) != 0 || *l.Spec.HolderIdentity != name || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(renew) {
		t.Errorf("seeded lease %+v", l)
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a leaked lease has no Node, got %v", err)
	}
	for _, bad := range []struct {
		name  string
		renew time.Time
		want  string
	}{
		{"Bad_Name", renew, "lease name"},
		{"ok-name", time.Time{}, "renewTime is required"},
		{name, renew, "already exists"},
	} {
		if _, err := kubeletsim.SeedLeakedLease(ctx, admin, bad.name, bad.renew); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SeedLeakedLease(%q): error %v, want %q", bad.name, err, bad.want)
		}
	}
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	f := env.NewFleet(t)
	name := uniqueName()
	if _, err := f.Start(ctx, kubeletsim.Config{Name: name, LeaseDurationSeconds: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Start(ctx, kubeletsim.Config{Name: name}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := f.Start(ctx, kubeletsim.Config{Name: "x", InstanceType: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown instance type") {
		t.Errorf("bad config: %v", err)
	}
	if _, err := kubeletsim.NewFleet(nil).Start(ctx, kubeletsim.Config{Name: "x"}); err == nil {
		t.Error("a fleet without ConfigFunc must refuse to start kubelets")
	}
	// A kubelet with another node's identity is refused by NodeRestriction, and retries as the
	// kubelet does; Start reports the refusal once its context ends. The context ends on the
	// event, once the refusal was logged, not after a time window that a loaded machine may
	// spend before the first answer.
	wrong := kubeletsim.NewFleet(func(string) *rest.Config { return env.UserConfig("system:node:someone-else", "system:nodes") })
	short, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var refused sync.Once
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, "is forbidden") {
			refused.Do(cancel)
		}
	}, funcr.Options{})
	_, err := wrong.Start(klog.NewContext(short, logger), kubeletsim.Config{Name: uniqueName()})
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("wrong identity: %v", err)
	}
	if len(wrong.Kubelets()) != 0 {
		t.Error("a kubelet that failed to start stays out of the fleet")
	}
}

// TestNodeStatusReports checks the status cadence: an unchanged status is patched only after
// the report frequency, and a condition set by someone else is corrected at the next sync.
func TestNodeStatusReports(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	k := startKubelet(t, kubeletsim.Config{LeaseDurationSeconds: 40, NodeStatusUpdateFrequency: 500 * time.Millisecond, NodeStatusReportFrequency: time.Hour})
	name := k.Name()
	// The first sync after start reports (lastStatusReport is zero), later ones do not.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return k.Stats().NodeStatusPatch == 1, nil
	})
	if err != nil {
		t.Fatalf("no status report after start: %+v", k.Stats())
	}
	before := k.Stats()
	time.Sleep(2 * time.Second)
	if s := k.Stats().Sub(before); s.NodeStatusPatch != 0 || s.NodeGet != 0 {
		t.Fatalf("an unchanged status within the report period must not be patched or re-read: %+v", s)
	}
	// Mark it NotReady as the node lifecycle controller would mark it Unknown.
	node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i].Status = corev1.ConditionUnknown
			node.Status.Conditions[i].Reason = "NodeStatusUnknown"
		}
	}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("kubelet did not restore Ready: %v", err)
	}
	if s := k.Stats(); s.NodeStatusPatch != 2 {
		t.Errorf("want exactly one corrective patch, stats %+v", s)
	}
}

// TestSeedOldLeakedLease: the lease is as old as its renewTime in the field the API server stamps
// (creationTimestamp), so that it is leaked, not a lease that merely carries an old renewTime.
func TestSeedOldLeakedLease(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	name := uniqueName()
	renew := time.Now().Add(-72 * time.Hour).Truncate(time.Microsecond)
	l, err := kubeletsim.SeedOldLeakedLease(ctx, admin, env, name, renew)
	if err != nil {
		t.Fatal(err)
	}
	if !l.CreationTimestamp.Time.Equal(renew.Truncate(time.Second)) || !l.Spec.RenewTime.Time.Equal(renew) {
		t.Errorf("creationTimestamp %s renewTime %s, want both %s", l.CreationTimestamp, l.Spec.RenewTime, renew)
	}
	if v := lease.Classify(l, nil, time.Now(), lease.Options{GracePeriod: time.Hour}); v.Class != lease.Leaked {
		t.Errorf("class %s (%s), want leaked", v.Class, v.Reason)
	}
	// Served as written: a read through the API server agrees.
	got, err := admin.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || !got.CreationTimestamp.Equal(&l.CreationTimestamp) || got.UID != l.UID {
		t.Errorf("GET after backdating = %v, %v", got, err)
	}
}
