package clusterread

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestEachBoundedStopsOnCancel: once the context is done no further call starts, whatever
// select would pick; the calls not started leave their results zero, and progress stops too.
func TestEachBoundedStopsOnCancel(t *testing.T) {
	for range 50 { // select's choice is random: give a regression many chances to show
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		started := make([]bool, 100)
		EachBounded(ctx, 1, len(started), nil, func(i int) {
			started[i] = true
			if calls.Add(1) == 3 {
				cancel()
			}
		})
		cancel()
		if n := calls.Load(); n > 4 {
			// one worker: the third call cancels; at most the one item already handed over runs after it
			t.Fatalf("%d calls ran after the context was canceled at the third", n)
		}
		if started[len(started)-1] {
			t.Fatal("the last item started after cancel")
		}
	}
	// Without cancel every item runs once, and progress counts them in order.
	var last int
	ran := make([]int, 40)
	EachBounded(context.Background(), 4, len(ran), func(done, total int) {
		if done != last+1 && done != 0 || total != len(ran) {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	}, func(i int) { ran[i]++ })
	for i, n := range ran {
		if n != 1 {
			t.Fatalf("item %d ran %d times", i, n)
		}
	}
}
