package audit

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

func linesInput(lines []string) []Input {
	return []Input{{Name: "log", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(strings.Join(lines, "\n"))), nil
	}}}
}

// Past its bounds the analysis keeps the totals exact, counts what it did not follow, and
// keeps the heaviest talker (space-saving) with a count that is never under the truth.
func TestMemoryBounds(t *testing.T) {
	var lines []string
	for i := 0; i < 1000; i++ {
		lines = append(lines, ev{at: float64(i) * 0.01, verb: "create", user: fmt.Sprintf("user-%d", i), res: "leases",
			name: fmt.Sprintf("node-%d", i), code: 201}.line())
	}
	// A heavy user that shows up only once every table is full.
	for i := 0; i < 500; i++ {
		lines = append(lines, ev{at: 20 + float64(i)*0.01, verb: "get", user: "heavy", res: "nodes", name: "n", code: 200}.line())
	}
	lim := limits{leases: 100, ringEvents: 50, nodes: 10, leaks: 5, talkers: 50, throtUsers: 5}
	r, err := analyzeWithin(linesInput(lines), Options{Top: 3}, lim, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Bounds
	if r.Totals.LeaseCreations != 1000 || len(r.Leases) != 100 || b.LeaseEventsNotTracked != 900 {
		t.Errorf("lease creations %d, lifecycles %d, not tracked %d", r.Totals.LeaseCreations, len(r.Leases), b.LeaseEventsNotTracked)
	}
	kept := 0
	for _, l := range r.Leases {
		kept += len(l.Events)
	}
	if kept != 50 {
		t.Errorf("%d lifecycle events kept, want the budget of 50", kept)
	}
	if b.TalkerEvictions == 0 || len(r.TopByRequests) == 0 {
		t.Fatalf("bounds %+v, top %+v", b, r.TopByRequests)
	}
	top := r.TopByRequests[0]
	if top.User != "heavy" || top.Requests < 500 || top.Requests-top.RequestsError > 500 {
		t.Errorf("heaviest talker %+v: want heavy with 500 requests within its error", top)
	}
	if b.Exact() {
		t.Error("bounds reached but reported exact")
	}
	var out strings.Builder
	if err := WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "BOUNDS  memory limits reached") {
		t.Errorf("the text report does not say which numbers are approximate:\n%s", out.String())
	}
}

// The string table is bounded: names past it compare by hash and print as not kept.
func TestInternerBounded(t *testing.T) {
	in := newInterner()
	in.max = 10
	ids := map[uint32]bool{}
	for i := 0; i < 100; i++ {
		ids[in.intern([]byte(fmt.Sprintf("name-%d", i)))] = true
	}
	if len(in.strs) != 10 || in.notKept != 91 || len(ids) != 100 {
		t.Errorf("table %d, not kept %d, distinct IDs %d", len(in.strs), in.notKept, len(ids))
	}
	a, b := in.intern([]byte("name-50")), in.intern([]byte("name-50"))
	if a != b || a&hashedID == 0 || in.snapshot()(a) != notKept {
		t.Errorf("a name past the table: %x %x %q", a, b, in.snapshot()(a))
	}
}
