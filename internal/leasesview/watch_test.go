package leasesview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// fakeWorld is the informer caches of a tracker unit test: leases and Nodes in maps.
type fakeWorld struct {
	leases map[string]*coordinationv1.Lease
	nodes  map[string]types.UID
}

func (w *fakeWorld) put(l *coordinationv1.Lease) { w.leases[key(l.Namespace, l.Name)] = l }

// recorder is a Sink that keeps what it is given.
type recorder struct {
	mu       sync.Mutex
	snapshot *Report
	changes  []Change
	notify   chan Change
}

func (r *recorder) Snapshot(rep *Report) error { r.snapshot = rep; return nil }
func (r *recorder) Change(c *Change) error {
	r.mu.Lock()
	r.changes = append(r.changes, *c)
	r.mu.Unlock()
	if r.notify != nil {
		r.notify <- *c
	}
	return nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.changes {
		out = append(out, fmt.Sprintf("%s %s %s->%s expired=%v", c.Type, c.Item.Name, c.From, c.Item.Class, c.Item.Expired))
	}
	r.changes = nil
	return out
}

func newTestTracker(t *testing.T, opts Options) (*tracker, *fakeWorld, *recorder, *testingclock.FakeClock) {
	t.Helper()
	leases, nodes := fixture()
	w := &fakeWorld{leases: map[string]*coordinationv1.Lease{}, nodes: nodes}
	for _, l := range leases {
		w.put(l)
	}
	clk := testingclock.NewFakeClock(fixedNow)
	opts.Clock = clk
	opts.Lease = lease.Options{GracePeriod: time.Hour}
	rec := &recorder{}
	tr := newTracker(opts, rec, func(err error) { t.Errorf("sink failed: %v", err) })
	t.Cleanup(tr.rechecks.ShutDown)
	tr.getLease = func(k string) (*coordinationv1.Lease, bool) { l, ok := w.leases[k]; return l, ok }
	tr.listKeys = func() []string {
		var ks []string
		for k := range w.leases {
			ks = append(ks, k)
		}
		return ks
	}
	tr.nodeUID = func(n string) (types.UID, bool) { u, ok := w.nodes[n]; return u, ok }
	snap := Build(leases, nodes, Options{Clock: clk, Lease: opts.Lease})
	tr.seed(snap.Items)
	tr.start()
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("start reported changes for an unchanged world: %v", got)
	}
	return tr, w, rec, clk
}

func TestTrackerEvents(t *testing.T) {
	const n1 = "ip-10-0-1-1.ec2.internal"
	tests := []struct {
		name    string
		classes []lease.Class
		act     func(w *fakeWorld) string // returns the key to report an event for
		want    []string
	}{
		{
			name: "a renewal alone is not a change",
			act: func(w *fakeWorld) string {
				l := w.leases[key(lease.NodeLeaseNamespace, n1)].DeepCopy()
				l.Spec.RenewTime = micro(0)
				w.put(l)
				return key(l.Namespace, l.Name)
			},
		},
		{
			name: "Node deleted: healthy lease becomes owner-missing without any lease write",
			act: func(w *fakeWorld) string {
				delete(w.nodes, n1)
				return key(lease.NodeLeaseNamespace, n1)
			},
			want: []string{"MODIFIED " + n1 + " healthy->owner-missing expired=false"},
		},
		{
			name: "lease deleted",
			act: func(w *fakeWorld) string {
				delete(w.leases, key(lease.NodeLeaseNamespace, n1))
				return key(lease.NodeLeaseNamespace, n1)
			},
			want: []string{"DELETED " + n1 + " healthy->healthy expired=false"},
		},
		{
			name: "new lease of a kubelet without its Node",
			act: func(w *fakeWorld) string {
				w.put(nodeLease("ip-10-0-5-5.ec2.internal", 0))
				return key(lease.NodeLeaseNamespace, "ip-10-0-5-5.ec2.internal")
			},
			want: []string{"ADDED ip-10-0-5-5.ec2.internal ->zombie expired=false"},
		},
		{
			name: "leader handover: holder changes, class does not",
			act: func(w *fakeWorld) string {
				l := w.leases["kube-system/kube-controller-manager"].DeepCopy()
				l.Spec.HolderIdentity = ptr.To("cp-2_x")
				w.put(l)
				return "kube-system/kube-controller-manager"
			},
			want: []string{"MODIFIED kube-controller-manager leader->leader expired=false"},
		},
		{
			name:    "--class filter: a change that neither starts nor ends in the class is not shown",
			classes: []lease.Class{lease.Leaked},
			act: func(w *fakeWorld) string {
				delete(w.nodes, n1)
				return key(lease.NodeLeaseNamespace, n1)
			},
		},
		{
			name:    "--class filter: a change into the class is shown",
			classes: []lease.Class{lease.Unowned},
			act: func(w *fakeWorld) string {
				l := w.leases[key(lease.NodeLeaseNamespace, n1)].DeepCopy()
				l.OwnerReferences = nil
				w.put(l)
				return key(l.Namespace, l.Name)
			},
			want: []string{"MODIFIED " + n1 + " healthy->unowned expired=false"},
		},
		{
			name:    "--class filter: a change out of the class is shown",
			classes: []lease.Class{lease.Unowned},
			act: func(w *fakeWorld) string {
				delete(w.nodes, "ip-10-0-1-3.ec2.internal")
				return key(lease.NodeLeaseNamespace, "ip-10-0-1-3.ec2.internal")
			},
			want: []string{"MODIFIED ip-10-0-1-3.ec2.internal unowned->zombie expired=false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, w, rec, _ := newTestTracker(t, Options{Classes: tt.classes})
			tr.onEvent(tt.act(w))
			got := rec.take()
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// fireDue runs the queue's job synchronously: recheck (the function the queue's worker calls) on
// every lease with a recheck time. The delaying queue's own timing is client-go's; driving it with
// a fake clock from a test races its timer creation, so the tests call recheck directly.
func fireDue(tr *tracker) {
	tr.mu.Lock()
	keys := make([]string, 0, len(tr.due))
	for k := range tr.due {
		keys = append(keys, k)
	}
	tr.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		tr.recheck(k)
	}
}

// TestTrackerClockDriven: with no event at all, the clock alone turns the leader lock expired,
// the healthy lease stale (its kubelet stopped), then the zombie leaked and the live API server
// identity stale, each exactly once and not a moment early: every change carries the clock's
// time when it was made, which must be the step that made it due.
func TestTrackerClockDriven(t *testing.T) {
	tr, _, rec, clk := newTestTracker(t, Options{})
	steps := []struct {
		at   time.Duration // since fixedNow
		want []string
	}{
		{13 * time.Second, nil},
		// kube-controller-manager: 15s lock renewed 1s before fixedNow.
		{14 * time.Second, []string{"MODIFIED kube-controller-manager leader->leader expired=true"}},
		{35 * time.Second, nil},
		// ip-10-0-1-1: renewed 4s before fixedNow, 40s duration.
		{36 * time.Second, []string{"MODIFIED ip-10-0-1-1.ec2.internal healthy->stale expired=true"}},
		{time.Hour - 6*time.Second, nil},
		// The zombie (renewed 5s before fixedNow, 1h grace) and the live identity (3600s lease,
		// renewed 5s before fixedNow) both turn at fixedNow+59m55s.
		{time.Hour - 5*time.Second, []string{
			"MODIFIED apiserver-apb4cp4hnblpcjsgshanwtmkya apiserver-identity->apiserver-identity expired=true",
			"MODIFIED ip-10-0-9-9.ec2.internal zombie->leaked expired=true",
		}},
	}
	for _, st := range steps {
		clk.SetTime(fixedNow.Add(st.at))
		fireDue(tr)
		rec.mu.Lock()
		for _, c := range rec.changes {
			if !c.Time.Time.Equal(fixedNow.Add(st.at)) {
				t.Errorf("change of %s made at %s, want at +%s", c.Item.Name, c.Time.Time.Sub(fixedNow), st.at)
			}
		}
		rec.mu.Unlock()
		got := rec.take()
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(st.want, "\n") {
			t.Fatalf("at +%s: %v, want %v", st.at, got, st.want)
		}
	}
	if n := tr.pendingRechecks(); n != 0 {
		t.Errorf("%d rechecks still pending though nothing can change by time any more", n)
	}
}

// TestTrackerRecheckMovedLater: a lease renewed after its recheck was queued is not reported at
// the old time, but at the new one.
func TestTrackerRecheckMovedLater(t *testing.T) {
	tr, w, rec, clk := newTestTracker(t, Options{})
	const kcm = "kube-system/kube-controller-manager"
	renewed := w.leases[kcm].DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: fixedNow.Add(10 * time.Second)}
	w.leases[kcm] = renewed
	clk.SetTime(fixedNow.Add(10 * time.Second))
	tr.onEvent(kcm) // a renewal: no change, but the lock now expires at +25s
	clk.SetTime(fixedNow.Add(24 * time.Second))
	tr.recheck(kcm) // queued for +14s, due at +25s: requeued, nothing reported
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("reported before the new expiry: %v", got)
	}
	clk.SetTime(fixedNow.Add(25 * time.Second))
	fireDue(tr)
	rec.mu.Lock()
	if at := rec.changes[0].Time.Time; !at.Equal(fixedNow.Add(25 * time.Second)) {
		t.Errorf("reported at +%s, want +25s", at.Sub(fixedNow))
	}
	rec.mu.Unlock()
	got := rec.take()
	want := []string{"MODIFIED kube-controller-manager leader->leader expired=true"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes = %v, want %v", got, want)
	}
}

func TestWatchPrinter(t *testing.T) {
	leases, nodes := fixture()
	snap := Build(leases, nodes, fixedOptions())
	change := &Change{TypeMeta: newTypeMeta(ChangeKind), Type: Modified, Time: snap.GeneratedAt, From: lease.Healthy, Item: snap.Items[3]}
	t.Run("table", func(t *testing.T) {
		var out bytes.Buffer
		p := NewWatchPrinter(&out, PrintOptions{AllNamespaces: true})
		if err := p.Snapshot(filterReport(snap, []lease.Class{lease.Zombie})); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := p.Change(change); err != nil {
				t.Fatal(err)
			}
		}
		assertGolden(t, "watch.golden", out.Bytes())
	})
	t.Run("json stream decodes", func(t *testing.T) {
		var out bytes.Buffer
		p := NewWatchPrinter(&out, PrintOptions{Format: FormatJSON})
		if err := p.Snapshot(snap); err != nil {
			t.Fatal(err)
		}
		if err := p.Change(change); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(&out)
		var r Report
		var c Change
		if err := dec.Decode(&r); err != nil || r.Kind != ReportKind || len(r.Items) != len(snap.Items) {
			t.Fatalf("first document: %v %s %d", err, r.Kind, len(r.Items))
		}
		if err := dec.Decode(&c); err != nil || c.Kind != ChangeKind || c.Item.Name != change.Item.Name || c.From != lease.Healthy {
			t.Fatalf("second document: %v %+v", err, c)
		}
	})
}
