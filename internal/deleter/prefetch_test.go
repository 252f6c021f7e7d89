package deleter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// prefetchModes are the two ways PrefetchNodeChecker reads a window: the node count it is given
// decides (a small cluster: LIST; a large one: GETs).
var prefetchModes = []struct {
	name      string
	nodeCount int
	list      bool
}{{"LIST", 0, true}, {"GET", 1 << 30, false}}

func TestPrefetchNodeChecker(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	md, err := metadata.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(kube.Protobuf(env.AdminConfig()))
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range prefetchModes {
		t.Run(mode.name+": answers every check right, each from a read started after the checker", func(t *testing.T) {
			var names []string
			want := map[string]bool{}
			for i := range 60 {
				name := uniqueName()
				if i%15 == 0 {
					// Created before the checker: every read must see it.
					createNode(t, admin, name)
					want[name] = true
				}
				names = append(names, name)
			}
			p := NewPrefetchNodeChecker(md, names, mode.nodeCount, PrefetchOptions{Window: 8, GetsInFlight: 3})
			defer p.Close()
			if p.UsesList() != mode.list {
				t.Fatalf("UsesList() = %v with %d Nodes", p.UsesList(), mode.nodeCount)
			}
			for _, name := range names {
				got, _, err := p.NodeExists(ctx, name)
				if err != nil || got != want[name] {
					t.Errorf("%s: exists=%v err=%v, want %v", name, got, err, want[name])
				}
			}
			if mode.list && p.Gets() != 0 {
				t.Errorf("%d GETs in LIST mode", p.Gets())
			}
			if !mode.list && p.Lists() != 0 {
				t.Errorf("%d LISTs in GET mode", p.Lists())
			}
		})

		// The negative test of the safety rule: the plan judged the lease leaked (no Node), then
		// the Node registered; the check (started after) must find it and the lease must stay.
		t.Run(mode.name+": deleter keeps a lease whose Node registered after the plan", func(t *testing.T) {
			late, absent := uniqueName(), uniqueName()
			lateLease := createLease(t, admin, late, 2*time.Hour)
			absentLease := createLease(t, admin, absent, 2*time.Hour)
			createNode(t, admin, late) // after the "plan", before the checker
			p := NewPrefetchNodeChecker(md, []string{late, absent}, mode.nodeCount, PrefetchOptions{})
			defer p.Close()
			// Both answers prefetched before the deletes ask: the prefetcher's read decides.
			awaitPrefetched(t, p, late)
			awaitPrefetched(t, p, absent)
			d, err := New(cs.CoordinationV1(), md, Options{Classify: lease.Options{GracePeriod: time.Hour}, NodeChecker: p})
			if err != nil {
				t.Fatal(err)
			}
			if r := d.Delete(ctx, lateLease, nil); r.Outcome != NodeExists {
				t.Errorf("lease of a registered Node: outcome %s (%s), want %s", r.Outcome, r.Reason, NodeExists)
			}
			requireLease(t, late)
			if r := d.Delete(ctx, absentLease, nil); r.Outcome != Deleted {
				t.Errorf("leaked lease: outcome %s (%s), want %s", r.Outcome, r.Reason, Deleted)
			}
		})
	}

	t.Run("a check asked before its read started, or never given, GETs the Node itself", func(t *testing.T) {
		present := uniqueName()
		createNode(t, admin, present)
		var names []string
		for i := range 20 {
			names = append(names, fmt.Sprintf("prefetch-absent-%d", i))
		}
		names = append(names, present)
		// A window of 2 and checks asked in reverse order: the prefetcher cannot reach the last
		// names before they are asked for, so they must not wait for it.
		p := NewPrefetchNodeChecker(md, names, 0, PrefetchOptions{Window: 2})
		defer p.Close()
		// A check that waited for the prefetcher here would wait for ever: fail instead.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for i := len(names) - 1; i >= 0; i-- {
			got, _, err := p.NodeExists(ctx, names[i])
			if err != nil || got != (names[i] == present) {
				t.Errorf("%s: exists=%v err=%v", names[i], got, err)
			}
		}
		if got, n, err := p.NodeExists(ctx, present); err != nil || !got || n != 1 {
			t.Errorf("asked twice: exists=%v requests=%d err=%v, want a fresh GET that finds it", got, n, err)
		}
	})

	t.Run("a forgotten check frees its place in the window", func(t *testing.T) {
		names := []string{"forget-a", "forget-b", "forget-c"}
		p := NewPrefetchNodeChecker(md, names, 1<<30, PrefetchOptions{Window: 2, GetsInFlight: 2})
		defer p.Close()
		started := func(name string) bool { return prefetchStarted(p, name) }
		waitFor(t, func() bool { return started("forget-a") && started("forget-b") })
		p.Forget("forget-a")
		p.Forget("forget-b")
		// c starts only once a or b leaves the window.
		waitFor(t, func() bool { return started("forget-c") })
		if got, n, err := p.NodeExists(ctx, "forget-c"); err != nil || got || n != 0 {
			t.Errorf("forget-c: exists=%v requests=%d err=%v, want its prefetched answer", got, n, err)
		}
	})

	t.Run("a lease the deleter does not delete after all gives its place in the window back", func(t *testing.T) {
		fresh, a, b := uniqueName(), uniqueName(), uniqueName()
		freshLease := createLease(t, admin, fresh, 0) // renewed now: not leaked any more
		p := NewPrefetchNodeChecker(md, []string{fresh, a, b}, 1<<30, PrefetchOptions{Window: 2, GetsInFlight: 2})
		defer p.Close()
		d, err := New(cs.CoordinationV1(), md, Options{Classify: lease.Options{GracePeriod: time.Hour}, NodeChecker: p})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return prefetchStarted(p, fresh) && prefetchStarted(p, a) })
		if r := d.Delete(ctx, freshLease, nil); r.Outcome != NotLeaked {
			t.Fatalf("renewed lease: outcome %s (%s), want %s", r.Outcome, r.Reason, NotLeaked)
		}
		waitFor(t, func() bool { return prefetchStarted(p, b) })
	})

	t.Run("cancelled check", func(t *testing.T) {
		p := NewPrefetchNodeChecker(md, []string{"x"}, 0, PrefetchOptions{})
		defer p.Close()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := p.NodeExists(cctx, "x"); err == nil {
			t.Error("no error from a cancelled check")
		}
	})
}

// waitFor polls cond until it holds; the test fails if it never does (the deadline only stops
// a hung test, it measures nothing).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func prefetchStarted(p *PrefetchNodeChecker, name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entries[name].state == started
}

// awaitPrefetched waits until the prefetcher has answered name's check (not the caller's own GET).
func awaitPrefetched(t *testing.T, p *PrefetchNodeChecker, name string) {
	t.Helper()
	waitFor(t, func() bool { return prefetchStarted(p, name) })
	<-p.entries[name].done
}
