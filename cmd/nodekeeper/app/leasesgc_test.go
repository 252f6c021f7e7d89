package app

import (
	"runtime/debug"
	"testing"
)

// TestListingGC: a listing raises GOGC and sets a soft memory limit unless the environment sets
// them, and puts both back when it is done (commands run in-process in the tests).
func TestListingGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	restore := listingGC()
	if got := debug.SetGCPercent(listingGCPercent); got != listingGCPercent {
		t.Errorf("GOGC during the listing = %d, want %d", got, listingGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != listingMemoryLimit {
		t.Errorf("memory limit during the listing = %d, want %d", got, listingMemoryLimit)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC after the listing = %d, want 100 back", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit after the listing = %d, want %d back", got, int64(1<<40))
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "64MiB")
	restore = listingGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=50 in the environment: the listing set %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT in the environment: the listing set %d", got)
	}
	restore()
}
