package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// assertGolden compares got with testdata/golden/NAME (golden.Assert; -update rewrites it).
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", "golden", name), got)
}

func renderAll(t *testing.T, r *analyze.Report) (text, js []byte) {
	t.Helper()
	var tb, jb bytes.Buffer
	if err := render.WriteText(&tb, r); err != nil {
		t.Fatal(err)
	}
	// The JSON as -o json streams it, which must be the bytes the indenting encoder writes for
	// the whole Report (its MarshalJSON).
	if err := r.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	var eb bytes.Buffer
	enc := json.NewEncoder(&eb)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(jb.Bytes(), eb.Bytes()) {
		t.Errorf("WriteJSON differs from the encoder:\n%s\nencoder:\n%s", jb.Bytes(), eb.Bytes())
	}
	schematest.Validate(t, analyze.ReportKind, jb.Bytes())
	return tb.Bytes(), jb.Bytes()
}

// The seed 001 document's events tell its story: kubernetes-admin deleted the Node with kubectl,
// the garbage collector deleted the lease 30 ms later, the kubelet (i-04ccfd26e5c668ef8 at
// 10.29.79.205) kept calling (GET 404), and a kubelet of 1.29 created its lease again, which it
// only does once its Node exists.
func TestGoldenSeed001(t *testing.T) {
	r, err := analyzeFiles(t, analyze.Options{}, "testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	text, js := renderAll(t, r)
	assertGolden(t, "seed001.txt", text)
	assertGolden(t, "seed001.json", js)

	if len(r.NodeDeletions) != 1 {
		t.Fatalf("deletions %+v", r.NodeDeletions)
	}
	d := r.NodeDeletions[0]
	if d.Event.Actor.User != "kubernetes-admin" || d.Event.Actor.SourceIP != "221.154.70.216" ||
		d.LeaseDeleted == nil || d.LeaseDeleted.After != 30121*time.Microsecond ||
		d.LeaseDeleted.Actor.User != "system:serviceaccount:kube-system:generic-garbage-collector" {
		t.Errorf("deletion %+v", d)
	}
	if len(r.Zombies) != 1 || r.Zombies[0].Identities[0] != "i-04ccfd26e5c668ef8" || r.Zombies[0].SourceIPs[0] != "10.29.79.205" {
		t.Errorf("zombies %+v", r.Zombies)
	}
	if len(r.Leaks) != 0 {
		t.Errorf("a 1.29 kubelet's lease create is no leak: %+v", r.Leaks)
	}
}

// Narrowing the report leaves the analysis whole.
func TestGoldenSeed001Filters(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts analyze.Options
	}{
		{"seed001-user-gc.txt", analyze.Options{User: "system:serviceaccount:kube-system:generic-garbage-collector"}},
		{"seed001-node-other.txt", analyze.Options{Node: "ip-10-29-104-121.ap-northeast-2.compute.internal"}},
		{"seed001-node.txt", analyze.Options{Node: "ip-10-29-79-205.ap-northeast-2.compute.internal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := analyzeFiles(t, tc.opts, "testdata/seed001/events.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			text, _ := renderAll(t, r)
			assertGolden(t, tc.name, text)
		})
	}
}

func scenarioReport(t *testing.T) (*analyze.Report, auditgen.Truth) {
	t.Helper()
	data, truth := genLog(t, auditgen.Config{Nodes: 30, Duration: 4 * time.Minute, Seed: 11, ThrottledClient: true,
		CleanupCronJob: 30 * time.Second, ManualLeaseDelete: true, HeartbeatTrouble: true})
	r, err := analyze.AnalyzeReader("scenario.log", bytes.NewReader(data), analyze.Options{Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	return r, truth
}

func TestGoldenScenario(t *testing.T) {
	r, truth := scenarioReport(t)
	text, js := renderAll(t, r)
	assertGolden(t, "scenario.txt", text)
	assertGolden(t, "scenario.json", js)
	var zombies, leaked []string
	for _, z := range r.Zombies {
		zombies = append(zombies, z.Node)
	}
	for _, l := range r.Leaks {
		if l.Status == analyze.LeakLeaked {
			leaked = append(leaked, l.Name)
		}
	}
	expectSame(t, "zombies", zombies, truth.Zombies)
	expectSame(t, "leaks", leaked, truth.Leaked)
	if r.Throttling.Throttled != truth.Throttled || r.Throttling.ByUser[0].User != truth.ThrottledUser {
		t.Errorf("throttled %d by %+v, want %d by %s", r.Throttling.Throttled, r.Throttling.ByUser, truth.Throttled, truth.ThrottledUser)
	}
	expectHealth(t, r, truth, analyze.DefaultChurnThreshold)
}

// expectHealth compares the lease churn and heartbeat sections with what the generator played:
// the actors with more than threshold churns are named with their exact counts, every churn is
// counted, and exactly the troubled kubelets are named with their status.
func expectHealth(t *testing.T, r *analyze.Report, truth auditgen.Truth, threshold int) {
	t.Helper()
	var named, wantNamed []string
	var all int64
	for user, n := range truth.Churns {
		all += n
		if n > int64(threshold) {
			wantNamed = append(wantNamed, fmt.Sprintf("%s×%d", user, n))
		}
	}
	for _, a := range r.LeaseChurn.Actors {
		named = append(named, fmt.Sprintf("%s×%d", a.User, a.Churns))
		if a.ExtraWrites != 2*a.Churns {
			t.Errorf("%s: %d extra etcd writes for %d churns", a.User, a.ExtraWrites, a.Churns)
		}
	}
	expectSame(t, "lease churn actors", named, wantNamed)
	if r.LeaseChurn.Churns != all {
		t.Errorf("%d churns counted, the generator played %d", r.LeaseChurn.Churns, all)
	}
	byStatus := map[string][]string{}
	for _, n := range r.Heartbeats.Nodes {
		byStatus[n.Status] = append(byStatus[n.Status], n.Node)
	}
	expectSame(t, "nodes over the grace period", byStatus[analyze.HeartbeatOverGrace], truth.OverGrace)
	expectSame(t, "nodes near the grace period", byStatus[analyze.HeartbeatNearGrace], truth.NearGrace)
	expectSame(t, "nodes only throttled", byStatus[analyze.HeartbeatThrottled], truth.ThrottledOnly)
}

// A healthy fleet, where an admin deleted one lease by hand once, names no actor and no node.
func TestHealthyFleetNamesNobody(t *testing.T) {
	data, truth := genLog(t, auditgen.Config{Nodes: 40, Duration: 6 * time.Minute, Seed: 3, Deletions: -1, ManualLeaseDelete: true})
	r, err := analyze.AnalyzeReader("healthy.log", bytes.NewReader(data), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if truth.Churns[auditgen.AdminUser] != 1 || r.LeaseChurn.Churns != 1 || r.LeaseChurn.OthersActors != 1 {
		t.Errorf("the manual delete: truth %v, report %+v", truth.Churns, r.LeaseChurn)
	}
	if r.Heartbeats.Kubelets != 40 || r.Heartbeats.Throttled != 0 {
		t.Errorf("heartbeats %+v: want 40 kubelets, none throttled", r.Heartbeats)
	}
	expectHealth(t, r, truth, analyze.DefaultChurnThreshold)
	text, _ := renderAll(t, r)
	textcheck.Contains(t, "healthy fleet text", string(text), []string{"LEASE CHURN (0)", "nodes without a renewal for the grace period or more (marked NotReady): 0; within one renewal of it (40s or more): 0; only throttled: 0"},
		[]string{"over-grace", "near-grace"})
}

func expectSame(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
