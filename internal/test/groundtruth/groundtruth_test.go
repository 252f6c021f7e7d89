// Package groundtruth checks `nodekeeper audit` against ground truth from real components: a
// real kube-apiserver (with an audit policy) and kube-controller-manager, simulated kubelets
// playing the seed scenarios, and a client throttled by API Priority and Fairness. The audit
// log the API server wrote must yield exactly the leaks, zombies, deletions and 429s the test
// caused, and no others.
package groundtruth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunMain(m, testenv.MainOptions{
		Options: testenv.Options{ControllerManager: true, AuditPolicy: testenv.AuditLikeEKS,
			// Few seats in all, so that a priority level of one share gets one seat and a burst
			// of 32 concurrent requests is mostly rejected.
			APIServerArgs: []string{"--max-requests-inflight=30", "--max-mutating-requests-inflight=10"}},
		// The simulated kubelets log every 404 their zombies get; that is the point here.
		QuietKlog: true,
	}, &env)
}

const (
	admin          = "ops-admin"
	cleanupUser    = "lease-cleanup-cronjob"
	cleanupRuns    = 6
	throttledUser  = "report-exporter"
	renewEvery     = 2 * time.Second
	zombieFor      = 14 * time.Second
	zombieMinInLog = 8 * time.Second
)

// runs numbers the runs of the scenario in this process (go test -count=N): each run has its
// own node names and reads only the part of the shared API server's audit log it wrote.
var runs atomic.Int32

func TestAuditLogGroundTruth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	adminClient := kubernetes.NewForConfigOrDie(env.UserConfig(admin, "system:masters"))
	run := runs.Add(1)
	logStart := int64(0)
	if fi, err := os.Stat(env.AuditLogPath()); err == nil {
		logStart = fi.Size()
	}

	fleet := env.NewFleet(t)
	names := map[string]string{
		"modern":      fmt.Sprintf("ip-10-%d-1-1.us-west-2.compute.internal", run),
		"legacy":      fmt.Sprintf("ip-10-%d-1-2.us-west-2.compute.internal", run),
		"restart":     fmt.Sprintf("ip-10-%d-1-3.us-west-2.compute.internal", run),
		"leaseonly":   fmt.Sprintf("ip-10-%d-1-4.us-west-2.compute.internal", run),
		"dead":        fmt.Sprintf("ip-10-%d-1-5.us-west-2.compute.internal", run),
		"bystander":   fmt.Sprintf("ip-10-%d-1-6.us-west-2.compute.internal", run),
		"legacyalive": fmt.Sprintf("ip-10-%d-1-7.us-west-2.compute.internal", run),
		"legacylease": fmt.Sprintf("ip-10-%d-1-8.us-west-2.compute.internal", run),
	}
	kubelets := map[string]*kubeletsim.Kubelet{}
	for role, name := range names {
		mode := kubeletsim.Modern
		if strings.HasPrefix(role, "legacy") {
			mode = kubeletsim.Legacy
		}
		k, err := fleet.Start(ctx, kubeletsim.Config{Name: name, Mode: mode, LeaseDurationSeconds: 8, RenewInterval: renewEvery, Images: -1})
		if err != nil {
			t.Fatalf("start kubelet %s: %v", role, err)
		}
		kubelets[role] = k
	}
	// Every kubelet has its lease, owned by its Node, before anything happens.
	for role, name := range names {
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := adminClient.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
			return err == nil && len(l.OwnerReferences) == 1, nil
		}); err != nil {
			t.Fatalf("lease of %s (%s) never owned: %v", role, name, err)
		}
	}
	throttled := make(chan int64, 1)
	go func() { throttled <- throttle(ctx, t, adminClient) }()

	// The machine of "dead" dies first, then its Node is deleted: no zombie, no leak.
	kubelets["dead"].Stop()
	// A lease deleted alone comes back at once (the kubelet's Node exists), from a modern and
	// from a legacy kubelet.
	for _, role := range []string{"leaseonly", "legacylease"} {
		if err := adminClient.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Delete(ctx, names[role], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, role := range []string{"modern", "legacy", "restart", "dead"} {
		if err := adminClient.CoreV1().Nodes().Delete(ctx, names[role], metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete node %s: %v", role, err)
		}
	}
	// The garbage collector deletes the leases; the legacy kubelet re-creates its own ownerless.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := adminClient.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, names["legacy"], metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 0, nil
	}); err != nil {
		t.Fatalf("legacy kubelet never re-created its lease: %v", err)
	}
	// Lease churn: a cleanup job deletes the legacy zombie's ownerless lease, the kubelet
	// re-creates it at its next renewal, again and again.
	churnLeaseOf(ctx, t, kubernetes.NewForConfigOrDie(env.UserConfig(cleanupUser, "system:masters")), names["legacy"])
	time.Sleep(zombieFor)
	// kubelet restart: it registers its Node again and creates an owned lease.
	if err := kubelets["restart"].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := adminClient.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, names["restart"], metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1, nil
	}); err != nil {
		t.Fatalf("restarted kubelet has no owned lease: %v", err)
	}
	n429 := <-throttled
	denied := deny(ctx, t, names["bystander"])
	time.Sleep(3 * renewEvery)
	// The dead machine's lease must be gone before the log is read (the garbage collector).
	if _, err := adminClient.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, names["dead"], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lease of the dead machine: %v", err)
	}

	if keep := os.Getenv("NODEKEEPER_AUDIT_KEEP_LOG"); keep != "" {
		// For a look at the real thing: nodekeeper audit $NODEKEEPER_AUDIT_KEEP_LOG --html ...
		if data, err := os.ReadFile(env.AuditLogPath()); err == nil {
			os.WriteFile(keep, data, 0o644)
		}
	}
	inputs, err := read.ExpandInputs([]string{logSince(t, env.AuditLogPath(), logStart)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(inputs, analyze.Options{ZombieMinDuration: zombieMinInLog})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Bad != 0 {
		t.Errorf("the API server's own log has %d unusable lines: %+v", rep.Totals.Bad, rep.Inputs)
	}

	// Node deletions: exactly the four, by the admin, each followed by the GC's lease delete.
	var deleted []string
	for _, d := range rep.NodeDeletions {
		deleted = append(deleted, d.Node)
		if d.Event.Actor.User != admin || d.Event.Code != 200 {
			t.Errorf("deletion of %s: %+v", d.Node, d.Event)
		}
		if d.LeaseDeleted == nil || d.LeaseDeleted.Actor.User != "system:serviceaccount:kube-system:generic-garbage-collector" {
			t.Errorf("deletion of %s not followed by the garbage collector's lease delete: %+v", d.Node, d.LeaseDeleted)
		}
	}
	expectSet(t, "node deletions", deleted, names["modern"], names["legacy"], names["restart"], names["dead"])

	// Leaks: exactly the legacy kubelet's re-created lease is still leaked.
	var leaked []string
	for _, l := range rep.Leaks {
		if l.Status == analyze.LeakLeaked {
			leaked = append(leaked, l.Name)
			if l.Cause != analyze.CauseAfterNodeDeletion || l.Created.Action != "update-created" || l.Created.Code != 201 ||
				!l.Created.OwnersKnown || l.Created.Owners != "" || l.NodeDeletion == nil || l.NodeDeletion.Actor.User != admin {
				t.Errorf("leak %s: %+v", l.Name, l)
			}
		}
	}
	expectSet(t, "leaked leases", leaked, names["legacy"])

	// Zombies: the modern and legacy kubelets still run; the restarted one ended.
	zombies := map[string]analyze.Zombie{}
	var zs []string
	for _, z := range rep.Zombies {
		zombies[z.Node] = z
		zs = append(zs, z.Node)
	}
	expectSet(t, "zombies", zs, names["modern"], names["legacy"], names["restart"])
	for _, role := range []string{"modern", "legacy"} {
		z := zombies[names[role]]
		if z.Status != "running" || z.Deletion == nil || z.Deletion.Actor.User != admin || len(z.SourceIPs) == 0 {
			t.Errorf("zombie %s: %+v", role, z)
		}
	}
	if z := zombies[names["modern"]]; !hasCall(z, "get", "leases", 404) || !hasCall(z, "get", "nodes", 404) || z.LeaseRecreations != 0 {
		t.Errorf("modern zombie's signature: %+v", z.Calls)
	}
	if z := zombies[names["legacy"]]; !hasCall(z, "update", "leases", 201) || z.LeaseRecreations != 1+cleanupRuns {
		t.Errorf("legacy zombie's signature: %+v (recreations %d)", z.Calls, z.LeaseRecreations)
	}
	if z := zombies[names["restart"]]; z.Status != "ended" || z.Ended == nil || z.Ended.Actor.User != "system:node:"+names["restart"] {
		t.Errorf("restarted kubelet: %+v", z)
	}
	// Modern zombies poll about every renew interval: the rate says so.
	if z := zombies[names["modern"]]; z.PerMinute < 0.5*float64(2*time.Minute/renewEvery) {
		t.Errorf("modern zombie rate %.1f/min, expected about %d", z.PerMinute, 2*time.Minute/renewEvery)
	}

	// The lease deleted alone: deleted by the admin, re-created owned by its kubelet, no leak.
	var lc *analyze.LeaseLifecycle
	for i := range rep.Leases {
		if rep.Leases[i].Name == names["leaseonly"] {
			lc = &rep.Leases[i]
		}
	}
	if lc == nil || lc.Deletes != 1 || lc.Creates < 2 {
		t.Fatalf("lifecycle of the lease deleted alone: %+v", lc)
	}
	last := lc.Events[len(lc.Events)-1]
	if last.Action != "create" || last.Code != 201 || last.Actor.User != "system:node:"+names["leaseonly"] || last.Owners != "Node/"+names["leaseonly"] {
		t.Errorf("re-creation of the lease deleted alone: %+v", last)
	}

	// The legacy kubelet re-creates the lease deleted alone too, and no leak remains: its
	// Node exists, so the lease is (or soon gets) its owner.
	var lcl *analyze.LeaseLifecycle
	for i := range rep.Leases {
		if rep.Leases[i].Name == names["legacylease"] {
			lcl = &rep.Leases[i]
		}
	}
	if lcl == nil || lcl.Deletes != 1 || lcl.Creates+lcl.UpdateCreates < 2 {
		t.Fatalf("lifecycle of the legacy lease deleted alone: %+v", lcl)
	}
	if e := lcl.Events[len(lcl.Events)-1]; e.Code != 201 || e.Actor.User != "system:node:"+names["legacylease"] {
		t.Errorf("re-creation of the legacy lease deleted alone: %+v", e)
	}
	for _, l := range rep.Leaks {
		if l.Name == names["legacylease"] {
			t.Logf("legacy lease deleted alone: %s, %s", l.Cause, l.Status)
		}
	}

	// Throttling: every 429 the client saw is in the report, attributed to it.
	if rep.Throttling.Throttled != n429 || rep.Totals.Throttled != n429 {
		t.Errorf("report counts %d (totals %d) 429s, the client saw %d", rep.Throttling.Throttled, rep.Totals.Throttled, n429)
	}
	if len(rep.Throttling.ByUser) == 0 || rep.Throttling.ByUser[0].User != throttledUser || rep.Throttling.ByUser[0].Throttled != n429 {
		t.Errorf("throttled users: %+v", rep.Throttling.ByUser)
	}
	var sum int64
	for _, v := range rep.Timeline.Throttled {
		sum += v
	}
	if sum != n429 {
		t.Errorf("timeline holds %d 429s, want %d", sum, n429)
	}
	// Access denied: exactly the requests of the user without RBAC, each pair counted exactly.
	// (Other components may be denied too while the cluster starts: only this user is checked.)
	got := map[string]int64{}
	for _, row := range rep.AccessDenied.Rows {
		if row.User == deniedUser {
			if row.Code != 403 || row.Groups != "nodekeeper:test-tenants" {
				t.Errorf("denial of %s: %+v", deniedUser, row)
			}
			got[row.Verb+" "+row.Resource+" "+row.Namespace+"/"+row.Name] = row.Count
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(denied) {
		t.Errorf("denials of %s: report %v, client saw %v (all: %+v)", deniedUser, got, denied, rep.AccessDenied)
	}
	// Lease churn: the cleanup job is named with every round it played; the admin's two
	// deletes of a lease alone and the garbage collector's after the Node deletions stay under
	// the threshold.
	if c := rep.LeaseChurn; len(c.Actors) != 1 || c.Actors[0].User != cleanupUser || c.Actors[0].Churns != cleanupRuns ||
		c.Actors[0].ExtraWrites != 2*cleanupRuns || c.Actors[0].Leases != 1 || c.Actors[0].RecreatedByKubelet != cleanupRuns {
		t.Errorf("lease churn: %+v", c)
	}
	// Heartbeats: every kubelet renewed every 2 s; none went near the default grace period.
	if h := rep.Heartbeats; h.Kubelets != int64(len(names)) || h.IntervalP50 > 3*time.Second || h.OverGrace+h.NearGrace != 0 {
		t.Errorf("heartbeats: %+v", h)
	}
	t.Logf("%d events, %d node deletions, %d leaks (%d leaked), %d zombies, %d throttled", rep.Totals.Events,
		len(rep.NodeDeletions), len(rep.Leaks), len(leaked), len(rep.Zombies), n429)
}

// churnLeaseOf deletes the lease of a legacy zombie kubelet cleanupRuns times, each time once
// the kubelet has created it again (ownerless, by an update answered 201).
func churnLeaseOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	leases := cs.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace)
	for i := 0; i < cleanupRuns; i++ {
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("cleanup run %d: %v", i+1, err)
		}
		// Within the minute that makes a churn, or the case tests nothing.
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 50*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := leases.Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("cleanup run %d: the legacy kubelet did not re-create its lease: %v", i+1, err)
		}
	}
}

const deniedUser = "tenant-without-rbac"

// deny makes requests as a user no role is bound to and returns how many 403s of each
// (verb resource namespace/name) it received.
func deny(ctx context.Context, t *testing.T, bystander string) map[string]int64 {
	cs := kubernetes.NewForConfigOrDie(env.UserConfig(deniedUser, "nodekeeper:test-tenants"))
	out := map[string]int64{}
	count := func(key string, err error) {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: want 403, got %v", key, deniedUser, err)
			return
		}
		out[key]++
	}
	for i := 0; i < 5; i++ {
		_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
		count("get secrets kube-system/bootstrap-token-abcdef", err)
	}
	for i := 0; i < 3; i++ {
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 10})
		count("list nodes /", err)
	}
	for i := 0; i < 2; i++ {
		err := cs.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Delete(ctx, bystander, metav1.DeleteOptions{})
		count("delete leases kube-node-lease/"+bystander, err)
	}
	return out
}

func hasCall(z analyze.Zombie, verb, res string, code int) bool {
	for _, c := range z.Calls {
		if c.Verb == verb && c.Resource == res && c.Code == code {
			return true
		}
	}
	return false
}

func expectSet(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want exactly %v", what, got, want)
	}
}

// throttle puts one user in a priority level of one seat that rejects what it cannot serve,
// then lists leases from 32 goroutines until the API server has answered 429 a few hundred
// times (bounded in count and time). It returns how many 429s the client received.
func throttle(ctx context.Context, t *testing.T, admin kubernetes.Interface) int64 {
	fc := admin.FlowcontrolV1()
	_, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "one-seat"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(1)), BorrowingLimitPercent: ptr(int32(0)),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Errorf("create priority level: %v", err)
		return 0
	}
	t.Cleanup(func() {
		fc.FlowSchemas().Delete(context.Background(), "report-exporter", metav1.DeleteOptions{})
		fc.PriorityLevelConfigurations().Delete(context.Background(), "one-seat", metav1.DeleteOptions{})
		admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "report-exporter-view", metav1.DeleteOptions{})
	})
	_, err = fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "report-exporter"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "one-seat"},
			MatchingPrecedence: 100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: throttledUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}},
			}}},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Errorf("create flow schema: %v", err)
		return 0
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "report-exporter-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: throttledUser}},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Errorf("bind view: %v", err)
		return 0
	}
	cfg := env.UserConfig(throttledUser)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the server is the one to say no
	cfg.UserAgent = "report-exporter/0.9"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Errorf("client: %v", err)
		return 0
	}
	rc := cs.CoordinationV1().RESTClient()
	var n429, total atomic.Int64
	deadline := time.Now().Add(40 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n429.Load() < 300 && total.Load() < 10000 && time.Now().Before(deadline) && ctx.Err() == nil {
				total.Add(1)
				// No retry: each 429 must be one request, as each is one audit event.
				err := rc.Get().AbsPath("/apis/coordination.k8s.io/v1/leases").MaxRetries(0).Do(ctx).Error()
				var se *apierrors.StatusError
				if errors.As(err, &se) && se.Status().Code == http.StatusTooManyRequests {
					n429.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n429.Load() == 0 {
		t.Errorf("no 429 after %d requests", total.Load())
	}
	return n429.Load()
}

func ptr[T any](v T) *T { return &v }

// logSince copies the audit log from offset on (whole lines: the API server writes each event
// as one line, and offset was its size between two writes) into a file of the test's own.
func logSince(t *testing.T, path string, offset int64) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if offset > int64(len(data)) {
		t.Fatalf("the audit log shrank from %d to %d bytes", offset, len(data))
	}
	tail := data[offset:]
	if offset > 0 && data[offset-1] != '\n' {
		// The size was read while a line was half written: start at the next line.
		if j := bytes.IndexByte(tail, '\n'); j >= 0 {
			tail = tail[j+1:]
		}
	}
	out := t.TempDir() + "/audit.log"
	if err := os.WriteFile(out, tail, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
