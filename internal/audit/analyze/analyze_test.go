package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// ev describes one synthetic audit event for the analysis tests.
type ev struct {
	at      float64 // seconds after base
	verb    string
	user    string
	res     string // "leases" (kube-node-lease unless ns) or "nodes", or "" for a non-resource request
	ns      string
	name    string
	code    int
	ua      string
	reqObj  string // raw JSON
	respObj string
	imp     string // impersonated user
	stage   string
	sub     string
	took    float64 // seconds from received to the stage's time; 0 means 5 ms
}

var base = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

func (e ev) line() string {
	if e.stage == "" {
		e.stage = "ResponseComplete"
	}
	if e.ua == "" {
		e.ua = "kubectl/v1.30.0"
		if strings.HasPrefix(e.user, "system:node:") {
			e.ua = "kubelet/v1.30.4 (linux/amd64) kubernetes/2ab5bc6"
		}
	}
	t := base.Add(time.Duration(e.at * float64(time.Second)))
	var b strings.Builder
	fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"id-%s-%v","stage":%q,`, e.verb, e.at, e.stage)
	fmt.Fprintf(&b, `"requestURI":"/x","verb":%q,"user":{"username":%q,"groups":["system:authenticated"]},`, e.verb, e.user)
	if e.imp != "" {
		fmt.Fprintf(&b, `"impersonatedUser":{"username":%q},`, e.imp)
	}
	fmt.Fprintf(&b, `"sourceIPs":["10.0.0.9"],"userAgent":%q,`, e.ua)
	switch e.res {
	case "leases":
		ns := e.ns
		if ns == "" {
			ns = NodeLeaseNamespace
		}
		fmt.Fprintf(&b, `"objectRef":{"resource":"leases","namespace":%q,"name":%q,"apiGroup":"coordination.k8s.io","apiVersion":"v1"},`, ns, e.name)
	case "nodes":
		fmt.Fprintf(&b, `"objectRef":{"resource":"nodes","name":%q,"apiVersion":"v1"`, e.name)
		if e.sub != "" {
			fmt.Fprintf(&b, `,"subresource":%q`, e.sub)
		}
		b.WriteString(`},`)
	}
	fmt.Fprintf(&b, `"responseStatus":{"metadata":{},"code":%d},`, e.code)
	if e.reqObj != "" {
		fmt.Fprintf(&b, `"requestObject":%s,`, e.reqObj)
	}
	if e.respObj != "" {
		fmt.Fprintf(&b, `"responseObject":%s,`, e.respObj)
	}
	took := 5 * time.Millisecond
	if e.took != 0 {
		took = time.Duration(e.took * float64(time.Second))
	}
	fmt.Fprintf(&b, `"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		t.Format(time.RFC3339Nano), t.Add(took).Format(time.RFC3339Nano))
	return b.String()
}

func analyzeEvents(t *testing.T, opts Options, evs ...ev) *Report {
	t.Helper()
	var lines []string
	for _, e := range evs {
		lines = append(lines, e.line())
	}
	r, err := AnalyzeReader("events", strings.NewReader(strings.Join(lines, "\n")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Totals.Bad != 0 {
		t.Fatalf("bad test events: %+v", r.Inputs)
	}
	return r
}

const (
	nodeA  = "ip-10-0-0-1.ec2.internal"
	userA  = "system:node:" + nodeA
	admin  = "alice"
	gcUser = "system:serviceaccount:kube-system:generic-garbage-collector"
)

func leaseObj(owner bool) string {
	o := `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"` + nodeA + `","namespace":"kube-node-lease"`
	if owner {
		o += `,"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"` + nodeA + `","uid":"u1"}]`
	}
	return o + `},"spec":{"holderIdentity":"` + nodeA + `"}}`
}

// kubelet polls as a 1.29+ zombie does: GET lease 404, GET node 404, every 10 s.
func poll(from, to float64) []ev {
	var out []ev
	for t := from; t < to; t += 10 {
		out = append(out, ev{at: t, verb: "get", user: userA, res: "leases", name: nodeA, code: 404},
			ev{at: t + 0.01, verb: "get", user: userA, res: "nodes", name: nodeA, code: 404})
	}
	return out
}

// The first GET of the lease comes before the first 404 on the Node that reveals it missing.
func TestZombieWhoseDeletionPrecedesTheLog(t *testing.T) {
	r := analyzeEvents(t, Options{}, poll(0, 120)...)
	if len(r.Zombies) != 1 || r.Zombies[0].Deletion != nil || r.Zombies[0].Requests != 23 || r.Zombies[0].Status != "running" {
		t.Fatalf("zombies %+v", r.Zombies)
	}
}

func TestNewKubeletIsNoZombie(t *testing.T) {
	evs := []ev{{at: 0, verb: "get", user: userA, res: "nodes", name: nodeA, code: 404}}
	evs = append(evs, ev{at: 1, verb: "create", user: userA, res: "nodes", name: nodeA, code: 201})
	for t := 10.0; t < 200; t += 10 {
		evs = append(evs, ev{at: t, verb: "update", user: userA, res: "leases", name: nodeA, code: 200})
	}
	r := analyzeEvents(t, Options{}, evs...)
	if len(r.Zombies) != 0 || len(r.Leaks) != 0 {
		t.Fatalf("zombies %+v leaks %+v", r.Zombies, r.Leaks)
	}
}

func TestLeakStatuses(t *testing.T) {
	del := ev{at: 0, verb: "delete", user: admin, res: "nodes", name: nodeA, code: 200}
	gc := ev{at: 0.03, verb: "delete", user: gcUser, res: "leases", name: nodeA, code: 200}
	legacy := []ev{
		{at: 5, verb: "get", user: userA, res: "leases", name: nodeA, code: 404, ua: "kubelet/v1.27.9"},
		{at: 5.01, verb: "update", user: userA, res: "leases", name: nodeA, code: 201, ua: "kubelet/v1.27.9", reqObj: leaseObj(false), respObj: leaseObj(false)},
		{at: 15, verb: "update", user: userA, res: "leases", name: nodeA, code: 200, ua: "kubelet/v1.27.9"},
	}
	for _, tc := range []struct {
		name       string
		then       []ev
		status     string
		by         string
		zombieEnds bool
	}{
		{"still leaked", nil, LeakLeaked, "", false},
		{"deleted by someone", []ev{{at: 100, verb: "delete", user: "karpenter", res: "leases", name: nodeA, code: 200}}, LeakDeleted, "karpenter", false},
		{"node back", []ev{{at: 100, verb: "create", user: userA, res: "nodes", name: nodeA, code: 201}}, LeakNodeRecreated, userA, true},
		{"node seen again", []ev{{at: 100, verb: "get", user: "system:kube-controller-manager", res: "nodes", name: nodeA, code: 200}}, LeakNodeRecreated, "system:kube-controller-manager", true},
		{"adopted", []ev{{at: 100, verb: "update", user: admin, res: "leases", name: nodeA, code: 200, reqObj: leaseObj(true)}}, LeakAdopted, admin, false},
		{"failed delete changes nothing", []ev{{at: 100, verb: "delete", user: "karpenter", res: "leases", name: nodeA, code: 409}}, LeakLeaked, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := append([]ev{del, gc}, legacy...)
			evs = append(evs, tc.then...)
			evs = append(evs, ev{at: 130, verb: "get", user: "bob", res: "nodes", name: "other", code: 200}) // stretch the window
			r := analyzeEvents(t, Options{ZombieMinDuration: time.Second}, evs...)
			if len(r.Leaks) != 1 {
				t.Fatalf("leaks %+v", r.Leaks)
			}
			l := r.Leaks[0]
			if l.Cause != CauseAfterNodeDeletion || l.Status != tc.status || l.NodeDeletion == nil || l.NodeDeletion.Actor.User != admin ||
				!l.Created.OwnersKnown || l.Created.Owners != "" {
				t.Fatalf("leak %+v", l)
			}
			if tc.by != "" && (l.StatusEvent == nil || l.StatusEvent.Actor.User != tc.by) {
				t.Fatalf("status event %+v", l.StatusEvent)
			}
			if len(r.Zombies) != 1 || (r.Zombies[0].Status == "ended") != tc.zombieEnds || r.Zombies[0].LeaseRecreations != 1 {
				t.Fatalf("zombies %+v", r.Zombies)
			}
			d := r.NodeDeletions[0]
			if d.LeaseDeleted == nil || d.LeaseDeleted.Actor.User != gcUser || d.LeaseRecreated == nil || d.LeaseRecreated.How != "update-created" {
				t.Fatalf("deletion %+v", d)
			}
		})
	}
}

// A lease created without an ownerReference while its Node exists is reported (visible at
// level Request and above), and resolved when the kubelet sets the owner.
func TestCreatedWithoutOwner(t *testing.T) {
	evs := []ev{
		{at: 0, verb: "create", user: "bob", res: "nodes", name: nodeA, code: 201},
		{at: 1, verb: "create", user: "bob", res: "leases", name: nodeA, code: 201, reqObj: leaseObj(false)},
	}
	r := analyzeEvents(t, Options{}, evs...)
	if len(r.Leaks) != 1 || r.Leaks[0].Cause != CauseNoOwner || r.Leaks[0].Status != LeakLeaked {
		t.Fatalf("leaks %+v", r.Leaks)
	}
	evs = append(evs, ev{at: 11, verb: "update", user: userA, res: "leases", name: nodeA, code: 200, reqObj: leaseObj(true), respObj: leaseObj(true)})
	r = analyzeEvents(t, Options{}, evs...)
	if r.Leaks[0].Status != LeakAdopted || r.Leaks[0].StatusEvent.Actor.User != userA {
		t.Fatalf("leaks %+v", r.Leaks)
	}
	// The same create at Metadata level (no object) says nothing about owners: no leak.
	evs[1].reqObj = ""
	r = analyzeEvents(t, Options{}, evs[:2]...)
	if len(r.Leaks) != 0 || r.Leases[0].Events[0].OwnersKnown {
		t.Fatalf("leaks %+v", r.Leaks)
	}
}

func TestImpersonationStagesAndOrder(t *testing.T) {
	evs := []ev{
		{at: 0, verb: "delete", user: admin, imp: "ops-bot", res: "nodes", name: nodeA, code: 200},
		{at: 0, verb: "delete", user: admin, res: "nodes", name: nodeA, code: 200, stage: "RequestReceived"},
		{at: 2, verb: "get", user: "x", res: "nodes", name: "n2", code: 500, stage: "Panic"},
		{at: 50, verb: "get", user: "x", res: "nodes", name: "n2", code: 200},
		{at: 1, verb: "get", user: "x", res: "nodes", name: "n2", code: 200}, // 49 s late: beyond the window
	}
	r := analyzeEvents(t, Options{}, evs...)
	d := r.NodeDeletions[0].Event
	if d.Actor.User != "ops-bot" || d.Actor.ImpersonatedBy != admin {
		t.Fatalf("actor %+v", d.Actor)
	}
	if r.Totals.Events != 4 || r.Totals.SkippedStages != 1 || r.Totals.OutOfOrder != 1 {
		t.Fatalf("totals %+v", r.Totals)
	}
	if r.TopByRequests[0].ServerErrors != 1 {
		t.Fatalf("talkers %+v", r.TopByRequests)
	}
}

func TestSeriesFoldsLongPeriods(t *testing.T) {
	var s tseries
	start := base.UnixNano()
	// One event per minute over 30 days: the series must fold into wide buckets and keep every count.
	n := 30 * 24 * 60
	for i := 0; i < n; i++ {
		s.at(start+int64(i)*int64(time.Minute)).Requests++
	}
	s.at(start-int64(time.Hour)).Requests++ // an early straggler extends it to the left
	if len(s.b) > seriesMaxBuckets {
		t.Fatalf("%d buckets", len(s.b))
	}
	var total int64
	for _, b := range s.b {
		total += b.Requests
	}
	if total != int64(n+1) || s.origin%s.width != 0 {
		t.Fatalf("total %d width %v origin %d", total, time.Duration(s.width), s.origin)
	}
	re := s.rebucket(s.origin, s.width*2, len(s.b)/2+1)
	total = 0
	for _, b := range re {
		total += b.Requests
	}
	if total != int64(n+1) {
		t.Fatalf("rebucketed total %d", total)
	}
}

// TestNodeBackByItsCreateLoggedLate: the audit log is written as responses complete, so a
// controller's PATCH of the re-created Node can be logged before the kubelet's create that made
// it (received first). The create is what ended the zombie and brought the Node back; a
// request that finds the Node with no create in the log still counts as the Node seen again.
func TestNodeBackByItsCreateLoggedLate(t *testing.T) {
	const kcm = "system:kube-controller-manager"
	del := ev{at: 0, verb: "delete", user: admin, res: "nodes", name: nodeA, code: 200}
	// The create is received first and completes last: its event is written after the patch's.
	patch := ev{at: 70.02, verb: "patch", user: kcm, res: "nodes", name: nodeA, code: 200}
	create := ev{at: 70, verb: "create", user: userA, res: "nodes", name: nodeA, code: 201, took: 0.05}
	for _, tc := range []struct {
		name      string
		tail      []ev
		user, how string
	}{
		{"create logged after the patch", []ev{patch, create}, userA, "Node re-created"},
		{"create completed first", []ev{{at: 70, verb: "create", user: userA, res: "nodes", name: nodeA, code: 201}, patch}, userA, "Node re-created"},
		{"no create in the log", []ev{patch}, kcm, "Node seen again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := append([]ev{del}, poll(1, 61)...)
			r := analyzeEvents(t, Options{ZombieMinDuration: time.Second}, append(evs, tc.tail...)...)
			if len(r.Zombies) != 1 || r.Zombies[0].Status != "ended" || r.Zombies[0].Ended == nil {
				t.Fatalf("zombies %+v", r.Zombies)
			}
			if e := r.Zombies[0].Ended; e.Actor.User != tc.user || e.How != tc.how {
				t.Errorf("zombie ended by %s (%s), want %s (%s)", e.Actor.User, e.How, tc.user, tc.how)
			}
			if len(r.NodeDeletions) != 1 || r.NodeDeletions[0].NodeRecreated == nil || r.NodeDeletions[0].NodeRecreated.Actor.User != tc.user {
				t.Errorf("deletion %+v", r.NodeDeletions)
			}
		})
	}
}
