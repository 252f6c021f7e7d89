package analyze

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

func linesInput(lines []string) []read.Input {
	return []read.Input{{Name: "log", Open: func() (io.ReadCloser, error) {
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
}
