package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// env runs kube-controller-manager with leader election (so its lock is a real leader lease)
// and its garbage collector (so Node deletion plays out as in a real cluster).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		ControllerManager:     true,
		ControllerManagerArgs: []string{"--leader-elect=true"},
	}, &env)
}

func clientsFor(t *testing.T, cfg *rest.Config) *leasesview.Clients {
	t.Helper()
	c, err := leasesview.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// itemsByName indexes a report's items by namespace/name.
func itemsByName(r *leasesview.Report) map[string]leasesview.Item {
	m := map[string]leasesview.Item{}
	for _, it := range r.Items {
		m[it.Namespace+"/"+it.Name] = it
	}
	return m
}

// waitForClass polls List until every lease in want has its class, and returns the last report.
func waitForClass(ctx context.Context, t *testing.T, c *leasesview.Clients, opts leasesview.Options, want map[string]lease.Class, timeout time.Duration) *leasesview.Report {
	t.Helper()
	var last *leasesview.Report
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		r, err := leasesview.List(ctx, c, opts)
		if err != nil {
			return false, err
		}
		last = r
		got := itemsByName(r)
		missing = missing[:0]
		for k, cl := range want {
			if it, ok := got[k]; !ok || it.Class != cl {
				missing = append(missing, fmt.Sprintf("%s: got %q (%s), want %s", k, it.Class, it.Reason, cl))
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("classes not reached: %v\n%s", err, strings.Join(missing, "\n"))
	}
	return last
}

// TestAPIServerIdentityAndLeader: the API server's own identity lease is apiserver-identity, live,
// and kube-controller-manager's lock is a leader lease whose holder is the running kcm.
func TestAPIServerIdentityAndLeader(t *testing.T) {
	ctx := context.Background()
	c := clientsFor(t, env.AdminConfig())
	want := map[string]lease.Class{"kube-system/kube-controller-manager": lease.Leader}
	// The identity lease's name is a hash of the host name; find it by its label, as the seed does.
	ids, err := env.AdminClient().CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: lease.APIServerIdentityLabel + "=kube-apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids.Items) != 1 {
		t.Fatalf("want the one API server's identity lease, got %d", len(ids.Items))
	}
	id := ids.Items[0]
	want["kube-system/"+id.Name] = lease.APIServerIdentity

	r := waitForClass(ctx, t, c, leasesview.Options{Namespace: "kube-system"}, want, time.Minute)
	got := itemsByName(r)
	kcm := got["kube-system/kube-controller-manager"]
	live, err := env.AdminClient().CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kcm.Holder == nil || *kcm.Holder == "" || *kcm.Holder != ptr.Deref(live.Spec.HolderIdentity, "") {
		t.Errorf("kcm holder = %v, want the lease's holder %q", kcm.Holder, ptr.Deref(live.Spec.HolderIdentity, ""))
	}
	if kcm.Expired || kcm.AcquireTime == nil || kcm.RenewTime == nil {
		t.Errorf("kcm lock: expired=%v acquire=%v renew=%v", kcm.Expired, kcm.AcquireTime, kcm.RenewTime)
	}
	if a := r.Summary.APIServers; a == nil || a.Live != 1 || a.Stale != 0 {
		t.Errorf("API servers = %+v, want 1 live, 0 stale", a)
	}
	if h := got["kube-system/"+id.Name].Hostname; h == "" || h != id.Labels["kubernetes.io/hostname"] {
		t.Errorf("identity hostname = %q, want the lease's label %q", h, id.Labels["kubernetes.io/hostname"])
	}
	// Nodes are not needed (and not listed) for kube-system: a client that may not list Nodes
	// still gets a report.
	if r.Summary.Count(lease.Healthy)+r.Summary.Count(lease.Zombie) != 0 {
		t.Errorf("node classes in kube-system: %+v", r.Summary.Counts)
	}
}

// TestNodeClasses: simulated kubelets and seeded leases in every class the garbage collector
// leaves alone, listed with a page size of 2 so that every listing crosses pages.
func TestNodeClasses(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	fleet := env.NewFleet(t)
	const (
		healthy = "ip-10-20-0-1.ec2.internal"
		stale   = "ip-10-20-0-2.ec2.internal"
		unowned = "ip-10-20-0-3.ec2.internal"
		zombie  = "ip-10-20-0-4.ec2.internal"
		leaked  = "ip-10-20-0-5.ec2.internal"
		other   = "ip-10-20-0-6.ec2.internal"
	)
	// leaked: what a pre-1.29 kubelet left behind. The API server stamps creation now, and the
	// grace period counts from the last activity, so it is leaked once the (minimum) grace of
	// one lease duration has passed — set up first so that the wait overlaps everything else.
	if _, err := kubeletsim.SeedOldLeakedLease(ctx, admin, env, leaked, time.Now().Add(-72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// healthy: a modern kubelet.
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: healthy}); err != nil {
		t.Fatal(err)
	}
	// stale: a kubelet whose machine died; its Node stays.
	ks, err := fleet.Start(ctx, kubeletsim.Config{Name: stale, LeaseDurationSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	// zombie: a pre-1.29 kubelet whose Node was deleted. The garbage collector deletes the owned
	// lease; the kubelet re-creates it without owner and keeps renewing it.
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: zombie, Mode: kubeletsim.Legacy, LeaseDurationSeconds: 8}); err != nil {
		t.Fatal(err)
	}
	waitForClass(ctx, t, clientsFor(t, env.AdminConfig()), leasesview.Options{Namespace: lease.NodeLeaseNamespace},
		map[string]lease.Class{"kube-node-lease/" + stale: lease.Healthy, "kube-node-lease/" + zombie: lease.Healthy}, time.Minute)
	ks.Stop()
	if err := admin.CoreV1().Nodes().Delete(ctx, zombie, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// unowned: a lease without owner whose Node exists (written before its Node registered).
	if _, err := kubeletsim.SeedLeakedLease(ctx, admin, unowned, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: unowned}}, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	// other: in kube-node-lease but held by something that is not a kubelet.
	if _, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: other},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("some-operator"), LeaseDurationSeconds: ptr.To[int32](30), RenewTime: ptr.To(metav1.NowMicro())},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}

	want := map[string]lease.Class{
		"kube-node-lease/" + healthy: lease.Healthy,
		"kube-node-lease/" + stale:   lease.Stale,
		"kube-node-lease/" + unowned: lease.Unowned,
		"kube-node-lease/" + zombie:  lease.Zombie,
		"kube-node-lease/" + leaked:  lease.Leaked,
		"kube-node-lease/" + other:   lease.Other,
	}
	// The shortest grace period: raised by the classification to each lease's own duration.
	opts := leasesview.Options{ChunkSize: 2, Lease: lease.Options{GracePeriod: time.Second}}
	c := clientsFor(t, env.AdminConfig())
	r := waitForClass(ctx, t, c, opts, want, 2*time.Minute)
	got := itemsByName(r)
	if n := got["kube-node-lease/"+healthy].Node; n == nil || n.UID != fleet.Get(healthy).NodeUID() {
		t.Errorf("healthy lease joined with node %+v, want uid %s", n, fleet.Get(healthy).NodeUID())
	}
	if z := got["kube-node-lease/"+zombie]; z.Node != nil || len(z.Owners) != 0 || z.Expired {
		t.Errorf("zombie: node %+v owners %v expired %v: want a renewed lease with neither", z.Node, z.Owners, z.Expired)
	}

	// The same listing in one page and in pages of 2 must agree exactly.
	opts.ChunkSize = 0
	one, err := leasesview.List(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if one.Summary.Total != r.Summary.Total || len(one.Items) != len(r.Items) {
		t.Errorf("paged listing has %d leases, single page %d", r.Summary.Total, one.Summary.Total)
	}
}

// TestWithoutControllerManager uses a second control plane: one without kube-controller-manager,
// because stale-owner and owner-missing last only until its garbage collector acts, and with the
// (beta, off by default) LeaseCandidate API served.
func TestWithoutControllerManager(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Start(ctx, testenv.Options{APIServerArgs: []string{
		"--feature-gates=CoordinatedLeaderElection=true",
		"--runtime-config=coordination.k8s.io/v1beta1=true",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	t.Run("stale-owner and owner-missing", func(t *testing.T) { testGCResolvedClasses(ctx, t, e) })
	t.Run("LeaseCandidates", func(t *testing.T) { testLeaseCandidates(ctx, t, e) })
}

func testLeaseCandidates(ctx context.Context, t *testing.T, e *testenv.Env) {
	cand := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "my-controller-pod-1", Namespace: "default"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: "my-controller", BinaryVersion: "1.36.3", EmulationVersion: "1.36.0",
			Strategy: coordinationv1.OldestEmulationVersion, RenewTime: ptr.To(metav1.NowMicro()),
		},
	}
	if _, err := e.AdminClient().CoordinationV1beta1().LeaseCandidates("default").Create(ctx, cand, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	r, err := leasesview.List(ctx, clientsFor(t, e.AdminConfig()), leasesview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.LeaseCandidateAPI != "coordination.k8s.io/v1beta1" {
		t.Fatalf("LeaseCandidate API = %q, want coordination.k8s.io/v1beta1", r.LeaseCandidateAPI)
	}
	found := false
	for _, c := range r.LeaseCandidates {
		if c.Namespace == "default" && c.Name == cand.Name {
			found = true
			if c.LeaseName != "my-controller" || c.BinaryVersion != "1.36.3" || c.Strategy != string(coordinationv1.OldestEmulationVersion) || c.RenewTime == nil {
				t.Errorf("candidate = %+v", c)
			}
		}
	}
	if !found {
		t.Errorf("candidate %s not in %+v", cand.Name, r.LeaseCandidates)
	}
	// The main control plane does not serve the API: no candidates, no error.
	r, err = leasesview.List(ctx, clientsFor(t, env.AdminConfig()), leasesview.Options{Namespace: "kube-system"})
	if err != nil || r.LeaseCandidateAPI != "" || len(r.LeaseCandidates) != 0 {
		t.Errorf("without the API: err %v, api %q, %d candidates", err, r.LeaseCandidateAPI, len(r.LeaseCandidates))
	}
}

func testGCResolvedClasses(ctx context.Context, t *testing.T, e *testenv.Env) {
	fleet := e.NewFleet(t)
	const recreated, deleted = "ip-10-30-0-1.ec2.internal", "ip-10-30-0-2.ec2.internal"
	kr, err := fleet.Start(ctx, kubeletsim.Config{Name: recreated})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: deleted}); err != nil {
		t.Fatal(err)
	}
	c := clientsFor(t, e.AdminConfig())
	waitForClass(ctx, t, c, leasesview.Options{}, map[string]lease.Class{
		"kube-node-lease/" + recreated: lease.Healthy, "kube-node-lease/" + deleted: lease.Healthy}, time.Minute)
	newUID, err := kr.RecreateNode(ctx, e.AdminClient())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AdminClient().CoreV1().Nodes().Delete(ctx, deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := waitForClass(ctx, t, c, leasesview.Options{}, map[string]lease.Class{
		"kube-node-lease/" + recreated: lease.StaleOwner, "kube-node-lease/" + deleted: lease.OwnerMissing}, time.Minute)
	if n := itemsByName(r)["kube-node-lease/"+recreated].Node; n == nil || n.UID != newUID {
		t.Errorf("stale-owner lease joined with %+v, want the new Node uid %s", n, newUID)
	}
}

// chanSink forwards a watch's output to channels.
type chanSink struct {
	snap    chan *leasesview.Report
	changes chan leasesview.Change
}

func (s *chanSink) Snapshot(r *leasesview.Report) error { s.snap <- r; return nil }
func (s *chanSink) Change(c *leasesview.Change) error   { s.changes <- *c; return nil }

// startWatch runs Watch until the test ends.
func startWatch(t *testing.T, c *leasesview.Clients, opts leasesview.Options) *chanSink {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &chanSink{snap: make(chan *leasesview.Report, 1), changes: make(chan leasesview.Change, 1000)}
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() { defer wg.Done(); werr = leasesview.Watch(ctx, c, opts, s) }()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if werr != nil {
			t.Errorf("watch: %v", werr)
		}
	})
	select {
	case <-s.snap:
	case <-time.After(time.Minute):
		t.Fatal("no snapshot")
	}
	return s
}

// awaitChange waits until a change of lease name satisfies ok, and returns when it arrived.
func awaitChange(t *testing.T, s *chanSink, name string, ok func(leasesview.Change) bool, timeout time.Duration) (leasesview.Change, time.Time) {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case c := <-s.changes:
			if c.Item.Name != name {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s %s->%s", c.Type, c.From, c.Item.Class))
			if ok(c) {
				return c, time.Now()
			}
		case <-deadline:
			t.Fatalf("no matching change of %s within %s; saw %v", name, timeout, seen)
		}
	}
}

// TestWatchSeesClassChangesWithinOneRenewInterval follows three leases through --watch:
//   - a kubelet stops: healthy → stale, driven by the clock alone, seen within one renew interval
//     of the moment the lease expired;
//   - a Node is deleted under a running pre-1.29 kubelet: the garbage collector deletes the lease
//     and the kubelet re-creates it ownerless: a zombie, seen within one renew interval of the
//     deletion;
//   - a Node is deleted under a modern kubelet: the change (owner-missing, then the lease deleted
//     by the garbage collector) is seen within one renew interval.
func TestWatchSeesClassChangesWithinOneRenewInterval(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	fleet := env.NewFleet(t)
	const dur = 8 // seconds; the kubelet renews every 2 s
	renew := time.Duration(dur) * time.Second / 4
	const stopper, legacy, modern = "ip-10-40-0-1.ec2.internal", "ip-10-40-0-2.ec2.internal", "ip-10-40-0-3.ec2.internal"
	ks, err := fleet.Start(ctx, kubeletsim.Config{Name: stopper, LeaseDurationSeconds: dur})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: legacy, Mode: kubeletsim.Legacy, LeaseDurationSeconds: dur}); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: modern, LeaseDurationSeconds: dur}); err != nil {
		t.Fatal(err)
	}
	c := clientsFor(t, env.AdminConfig())
	waitForClass(ctx, t, c, leasesview.Options{Namespace: lease.NodeLeaseNamespace}, map[string]lease.Class{
		"kube-node-lease/" + stopper: lease.Healthy, "kube-node-lease/" + legacy: lease.Healthy, "kube-node-lease/" + modern: lease.Healthy,
	}, time.Minute)
	s := startWatch(t, c, leasesview.Options{})

	// 1. Clock-driven: the machine dies.
	ks.Stop()
	l, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, stopper, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expiry := l.Spec.RenewTime.Add(time.Duration(dur) * time.Second)
	_, at := awaitChange(t, s, stopper, func(c leasesview.Change) bool { return c.From == lease.Healthy && c.Item.Class == lease.Stale },
		time.Duration(dur)*time.Second+2*renew+5*time.Second)
	if late := at.Sub(expiry); late > renew {
		t.Errorf("healthy → stale seen %s after the lease expired, more than one renew interval (%s)", late, renew)
	} else if late < 0 {
		t.Errorf("stale reported %s before the lease expired", -late)
	}

	// 2. Event-driven through the garbage collector and a pre-1.29 kubelet's re-creation: the
	// collector deletes the owned lease, and the kubelet re-creates it ownerless at its next
	// renewal, at most one renew interval later.
	if err := admin.CoreV1().Nodes().Delete(ctx, legacy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, gone := awaitChange(t, s, legacy, func(c leasesview.Change) bool { return c.Type == leasesview.Deleted }, 30*time.Second)
	_, at = awaitChange(t, s, legacy, func(c leasesview.Change) bool { return c.Type == leasesview.Added && c.Item.Class == lease.Zombie }, renew+10*time.Second)
	// Half a second covers the kubelet's PUT and the watch event on a busy machine.
	if took := at.Sub(gone); took > renew+500*time.Millisecond {
		t.Errorf("zombie seen %s after the collector deleted the lease, more than one renew interval (%s)", took, renew)
	}

	// 3. Node deleted under a modern kubelet: the change is seen at once.
	deletedAt := time.Now()
	if err := admin.CoreV1().Nodes().Delete(ctx, modern, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ch, at := awaitChange(t, s, modern, func(c leasesview.Change) bool { return c.From == lease.Healthy }, renew+10*time.Second)
	if ch.Item.Class != lease.OwnerMissing && ch.Type != leasesview.Deleted {
		t.Errorf("after its Node was deleted the modern kubelet's lease went %s → %s (%s)", ch.From, ch.Item.Class, ch.Type)
	}
	if took := at.Sub(deletedAt); took > renew {
		t.Errorf("change seen %s after the Node deletion, more than one renew interval (%s)", took, renew)
	}
}

// TestPermissions: a user who may read leases but not Nodes gets a clear error for a listing that
// includes node leases, and a full report for any other namespace (Nodes are not listed then).
func TestPermissions(t *testing.T) {
	ctx := context.Background()
	const user = "lease-reader"
	env.GrantClusterRole(t, user, rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}})
	c := clientsFor(t, env.UserConfig(user))
	if _, err := leasesview.List(ctx, c, leasesview.Options{Namespace: "kube-system"}); err != nil {
		t.Fatalf("kube-system listing, which needs no Nodes: %v", err)
	}
	for _, ns := range []string{"", lease.NodeLeaseNamespace} {
		_, err := leasesview.List(ctx, c, leasesview.Options{Namespace: ns})
		if err == nil || !strings.Contains(err.Error(), "node leases cannot be classified without listing Nodes") || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("namespace %q: err = %v, want a forbidden error that explains why Nodes are needed", ns, err)
		}
	}
}
