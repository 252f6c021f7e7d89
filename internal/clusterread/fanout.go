package clusterread

import (
	"context"
	"sync"
)

// EachBounded calls do(i) for i in [0, n) with at most workers calls in flight, and progress
// (when set) with the number done of n: once with 0 before the first call, then after each one,
// in order and never two at once. do writes its result to its own index, so it needs no lock.
// Once ctx is done no more calls start; the ones not started are left to the caller (their
// results stay zero). Every per-node read through the API server's proxies (configz, aws-node
// metrics) goes through here, so they share one bound and one progress contract.
func EachBounded(ctx context.Context, workers, n int, progress func(done, total int), do func(i int)) {
	if progress == nil {
		progress = func(int, int) {}
	}
	var mu sync.Mutex // serialises progress
	done := 0
	progress(0, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				do(i)
				mu.Lock()
				done++
				progress(done, n)
				mu.Unlock()
			}
		}()
	}
feed:
	for i := 0; i < n && ctx.Err() == nil; i++ {
		// select picks at random among ready cases: check ctx first so that none starts after.
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}
