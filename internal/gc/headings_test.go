package gc

import (
	"bytes"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// The plan table's header and the summary lines of gc's text output carry no Go identifier, fmt
// error or dump.
func TestHeadingsAreForPeople(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	for _, dry := range []bool{false, true} {
		var b bytes.Buffer
		PrintPlan(&b, testPlan(now), dry)
		r := &Report{
			Counts:   map[deleter.Outcome]int{deleter.Deleted: 1, deleter.PreconditionFailed: 1},
			Results:  []Result{{Name: "a", UID: "u1", Outcome: deleter.Deleted, Reason: "leaked"}, {Name: "b", UID: "u2", Outcome: deleter.PreconditionFailed, Reason: "renewed"}},
			Requests: 4, Duration: 1500 * time.Millisecond, Seconds: 1.5,
		}
		if err := WriteReport(&b, "table", testPlan(now), r, dry); err != nil {
			t.Fatal(err)
		}
		headings.Check(t, "gc text", headings.Text(b.String()))
	}
}
