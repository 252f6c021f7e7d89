package analyze

import (
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// The table of (who, what) pairs is bounded: past the limit new pairs are counted in the
// totals and as untracked, and the tracked counts stay exact.
func TestAccessDeniedBounded(t *testing.T) {
	d := deniedTable{limit: 3}
	for i := 0; i < 10; i++ {
		for name := uint32(1); name <= 5; name++ {
			d.add(&read.Record{User: name, Res: 1, Verb: read.VerbGet, Code: 403, Recv: int64(i)})
		}
	}
	rep := d.build(func(id uint32) string { return string(rune('a' + id)) }, 0)
	if rep.Forbidden != 50 || rep.Distinct != 3 || rep.Untracked != 20 || len(rep.Rows) != 3 {
		t.Fatalf("%+v", rep)
	}
	for _, r := range rep.Rows {
		if r.Count != 10 {
			t.Errorf("tracked pair %s counted %d, want 10", r.User, r.Count)
		}
	}
}
