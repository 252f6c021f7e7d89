package gc

import "testing"

// TestCounted: gc's summary says "1 lease" and "1 Node", never "1 leases".
func TestCounted(t *testing.T) {
	for n, want := range map[int]string{0: "0 leases", 1: "1 lease", 2: "2 leases"} {
		if got := counted(n, "lease"); got != want {
			t.Errorf("counted(%d) = %q, want %q", n, got, want)
		}
	}
}
