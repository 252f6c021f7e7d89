package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// gc's tests run without kube-controller-manager: every lease they seed stays until gc itself
// removes it, so each deletion counted is gc's.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// reset empties kube-node-lease and removes every Node.
func reset(t testing.TB) { env.DeleteNodesAndLeases(t) }

// clients are the typed (protobuf) and metadata clients gc is given, built as the command does.
func clients(t testing.TB, cfg *rest.Config) (kube.Interface, metadata.Interface) {
	t.Helper()
	c, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.Kube, c.Metadata
}

// seed creates n leases leaked two hours ago, named prefix-i.
func seed(t testing.TB, prefix string, n int) []string {
	t.Helper()
	return env.SeedLeakedLeases(t, prefix, n, time.Now().Add(-2*time.Hour))
}

// mixedCluster sets up one lease of each node class gc can see.
func mixedCluster(t *testing.T) map[lease.Class][]string {
	t.Helper()
	reset(t)
	now := time.Now()
	healthy := "ip-10-20-0-1.gc-healthy.internal"
	n := env.CreateNode(t, healthy)
	env.CreateNodeLease(t, healthy, now, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: healthy, UID: n.UID})
	unowned := "ip-10-20-0-2.gc-unowned.internal"
	env.CreateNode(t, unowned)
	env.CreateNodeLease(t, unowned, now.Add(-3*time.Hour))
	zombie := "ip-10-20-0-3.gc-zombie.internal"
	env.CreateNodeLease(t, zombie, now.Add(-time.Minute))
	other := "ip-10-20-0-4.gc-other.internal"
	o := env.CreateNodeLease(t, other, now.Add(-3*time.Hour))
	o.Spec.HolderIdentity = ptr.To("not-a-kubelet")
	if _, err := env.AdminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Update(context.Background(), o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaked := seed(t, "ip-10-20-1-1.gc-leaked", 5)
	return map[lease.Class][]string{
		lease.Healthy: {healthy}, lease.Unowned: {unowned}, lease.Zombie: {zombie}, lease.Other: {other}, lease.Leaked: leaked,
	}
}

func TestListAndCollect(t *testing.T) {
	ctx := context.Background()
	byClass := mixedCluster(t)
	cs, md := clients(t, env.AdminConfig())
	plan, err := List(ctx, cs.CoordinationV1(), md, ListOptions{Lease: lease.Options{GracePeriod: time.Hour}, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lease.Classes() {
		if got, want := plan.Counts[c], len(byClass[c]); got != want {
			t.Errorf("class %s: %d leases, want %d", c, got, want)
		}
	}
	if plan.Nodes != 2 || len(plan.Items) != 9 || len(plan.Leaked()) != 5 {
		t.Fatalf("plan: %d nodes, %d items, %d leaked", plan.Nodes, len(plan.Items), len(plan.Leaked()))
	}

	// Races after the listing: one leaked lease is renewed, another's Node registers, a third is
	// deleted by someone else. The safety rules must keep the first two and skip the third.
	leaked := byClass[lease.Leaked]
	l, err := cs.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, leaked[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = ptr.To(metav1.NowMicro())
	if _, err := cs.CoordinationV1().Leases(lease.NodeLeaseNamespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.CreateNode(t, leaked[1])
	if err := cs.CoordinationV1().Leases(lease.NodeLeaseNamespace).Delete(ctx, leaked[2], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	d, err := deleter.New(cs.CoordinationV1(), md, deleter.Options{Classify: lease.Options{GracePeriod: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	var last [2]int
	calls := 0
	report, err := Collect(ctx, d, plan, CollectOptions{Workers: 3, Progress: func(done, total int, _ map[deleter.Outcome]int) {
		calls++
		if done < last[0] {
			t.Errorf("progress went backwards: %d after %d", done, last[0])
		}
		last = [2]int{done, total}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != [2]int{5, 5} {
		t.Errorf("progress: %d calls, last %v, want a final 5/5", calls, last)
	}
	want := map[string]deleter.Outcome{
		leaked[0]: deleter.PreconditionFailed, leaked[1]: deleter.NodeExists, leaked[2]: deleter.Gone,
		leaked[3]: deleter.Deleted, leaked[4]: deleter.Deleted,
	}
	if len(report.Results) != 5 {
		t.Fatalf("%d results, want 5", len(report.Results))
	}
	for _, r := range report.Results {
		if r.Outcome != want[r.Name] {
			t.Errorf("%s: %s (%s), want %s", r.Name, r.Outcome, r.Reason, want[r.Name])
		}
	}
	if report.Counts[deleter.Deleted] != 2 || report.Failed() != 0 {
		t.Errorf("counts %v", report.Counts)
	}
	// 5 Node GETs, and a DELETE for each lease whose Node was absent.
	if report.Requests != 9 {
		t.Errorf("requests = %d, want 9", report.Requests)
	}
	for class, names := range byClass {
		for _, n := range names {
			gone := !env.NodeLeaseExists(t, n)
			wantGone := n == leaked[2] || n == leaked[3] || n == leaked[4]
			if gone != wantGone {
				t.Errorf("%s lease %s: gone=%v, want %v", class, n, gone, wantGone)
			}
		}
	}
}

func TestCollectDryRunAndCancel(t *testing.T) {
	ctx := context.Background()
	reset(t)
	names := seed(t, "ip-10-21-0-1.gc-dry", 20)
	cs, md := clients(t, env.AdminConfig())
	plan, err := List(ctx, cs.CoordinationV1(), md, ListOptions{Lease: lease.Options{GracePeriod: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := deleter.New(cs.CoordinationV1(), md, deleter.Options{Classify: lease.Options{GracePeriod: time.Hour}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Collect(ctx, dry, plan, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if report.Counts[deleter.WouldDelete] != 20 {
		t.Errorf("dry run counts %v", report.Counts)
	}
	for _, n := range names {
		if !env.NodeLeaseExists(t, n) {
			t.Fatalf("dry run deleted %s", n)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	d, err := deleter.New(cs.CoordinationV1(), md, deleter.Options{Classify: lease.Options{GracePeriod: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	report, err = Collect(cctx, d, plan, CollectOptions{Workers: 4})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled collection returned %v", err)
	}
	if report.Counts[deleter.Deleted] != 0 {
		t.Errorf("cancelled collection deleted %d", report.Counts[deleter.Deleted])
	}
}

// grantReadOnly lets user list and get leases and nodes, but not delete.
func grantReadOnly(t *testing.T, user string) {
	t.Helper()
	env.GrantClusterRole(t, user,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}})
}

// gcDoc is the part of `nodekeeper gc -o json` the tests read.
type gcDoc struct {
	DryRun   bool                    `json:"dryRun"`
	Classes  map[string]int          `json:"classes"`
	Outcomes map[deleter.Outcome]int `json:"outcomes"`
	Requests int                     `json:"requests"`
	Seconds  float64                 `json:"durationSeconds"`
	Results  []Result                `json:"results"`
}

func parseReport(b []byte) (gcDoc, error) {
	var d gcDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("gc report is not JSON: %w\n%.2000s", err, b)
	}
	return d, nil
}
