package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/progress"
)

// gc's progress callback puts the deletes done and their outcomes on the shared meter.
func TestLeaseProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		done   int
		counts map[deleter.Outcome]int
		want   string
	}{
		{"deletes and kept", 3, map[deleter.Outcome]int{deleter.Deleted: 2, deleter.NodeExists: 1}, "3/5 leases"},
		{"dry run counts as deleted", 2, map[deleter.Outcome]int{deleter.WouldDelete: 2}, "2 deleted, 0 kept by a safety check, 0 failed"},
		{"failures", 1, map[deleter.Outcome]int{deleter.Failed: 1}, "0 deleted, 0 kept by a safety check, 1 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := progress.New(&buf, progress.Always, progress.Options{Unit: "leases", Total: 5})
			leaseProgress(m)(tc.done, 5, tc.counts)
			m.Finish()
			if out := buf.String(); !strings.Contains(out, tc.want) || !strings.HasSuffix(out, "\n") {
				t.Errorf("progress %q, want it to contain %q and end with a newline", out, tc.want)
			}
		})
	}
}
