package gc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// seedAged creates one leaked lease per name, the i-th idle for 2h + i minutes, so the last name
// is the oldest.
func seedAged(t *testing.T, names ...string) {
	t.Helper()
	for i, n := range names {
		if _, err := kubeletsim.SeedOldLeakedLease(context.Background(), env.AdminClient(), env, n, time.Now().Add(-2*time.Hour-time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
}

// runSelected lists, selects and collects (dry or not) against the real API server.
func runSelected(t *testing.T, sel Selection, dryRun bool) (*Plan, *Report) {
	t.Helper()
	ctx := context.Background()
	cs, md := clients(t, env.AdminConfig())
	p, err := List(ctx, cs.CoordinationV1(), md, ListOptions{Lease: lease.Options{GracePeriod: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Select(sel); err != nil {
		t.Fatal(err)
	}
	d, err := deleter.New(cs.CoordinationV1(), md, deleter.Options{Classify: lease.Options{GracePeriod: time.Hour}, DryRun: dryRun})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Collect(ctx, d, p, CollectOptions{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// TestLimitNeverDeletesMoreThanN: a --limit run deletes at most N leases, and exactly the N idle
// longest; a dry run with a limit deletes nothing and would delete at most N; runs repeated with
// the same limit work through the rest, oldest first, never touching a lease that is not leaked.
func TestLimitNeverDeletesMoreThanN(t *testing.T) {
	byClass := mixedCluster(t) // 5 leaked of equal age, one lease of each other class
	var aged []string
	for i := range 6 {
		aged = append(aged, fmt.Sprintf("ip-10-30-0-%d.gc-limit.internal", i))
	}
	seedAged(t, aged...) // aged[5] is the oldest of all, then aged[4], …
	before := env.NodeLeaseNames(t)

	_, r := runSelected(t, Selection{Limit: 2}, true)
	if r.Counts[deleter.WouldDelete] != 2 || len(r.Results) != 2 {
		t.Fatalf("dry run with --limit 2: %v", r.Counts)
	}
	if after := env.NodeLeaseNames(t); len(after) != len(before) {
		t.Fatalf("dry run deleted %d leases", len(before)-len(after))
	}

	for round, want := range [][]string{{aged[5], aged[4]}, {aged[3], aged[2]}} {
		p, r := runSelected(t, Selection{Limit: 2}, false)
		if r.Counts[deleter.Deleted] != 2 || len(r.Results) != 2 || p.OverLimit == 0 {
			t.Fatalf("round %d: outcomes %v, %d results, %d over the limit", round, r.Counts, len(r.Results), p.OverLimit)
		}
		after := env.NodeLeaseNames(t)
		gone := map[string]bool{}
		for n := range before {
			if !after[n] {
				gone[n] = true
			}
		}
		if len(gone) != 2 || !gone[want[0]] || !gone[want[1]] {
			t.Errorf("round %d: deleted %v, want the two idle longest %v", round, slices.Sorted(maps.Keys(gone)), want)
		}
		before = after
	}
	for class, names := range byClass {
		if class == lease.Leaked {
			continue
		}
		for _, n := range names {
			if !before[n] {
				t.Errorf("%s lease %s deleted", class, n)
			}
		}
	}

	// A limit larger than what is left deletes only the leaked leases.
	_, r = runSelected(t, Selection{Limit: 1000}, false)
	if r.Counts[deleter.Deleted] != 2+len(byClass[lease.Leaked]) {
		t.Errorf("--limit 1000: %v, want every remaining leaked lease", r.Counts)
	}
	for class, names := range byClass {
		for _, n := range names {
			if env.NodeLeaseExists(t, n) == (class == lease.Leaked) {
				t.Errorf("%s lease %s: exists=%v after collecting every leaked lease", class, n, !env.NodeLeaseExists(t, n))
			}
		}
	}
}

// TestNameRegexpNeverDeletesANonMatchingLease: only leaked leases whose whole name matches are
// deleted; similar names (a longer octet, a prefix), other leaked leases, and leases of other
// classes that match the expression all stay.
func TestNameRegexpNeverDeletesANonMatchingLease(t *testing.T) {
	byClass := mixedCluster(t)
	match := []string{"ip-10-40-1-1.gc-name.internal", "ip-10-40-1-2.gc-name.internal"}
	similar := []string{"ip-10-40-11-1.gc-name.internal", "ip-10-40-2-1.gc-name.internal", "xip-10-40-1-3.gc-name.internal", "ip-10-40-1-4.gc-name.internal.evil"}
	seedAged(t, append(append([]string{}, match...), similar...)...)
	// The expression also matches the healthy, unowned, zombie and other leases of mixedCluster
	// (ip-10-20-0-*): a name selector must never make a lease of another class deletable.
	const expr = `ip-10-40-1-\d+\.gc-name\.internal|ip-10-20-0-\d+\..*`

	_, r := runSelected(t, Selection{NameRegexp: expr}, false)
	if r.Counts[deleter.Deleted] != len(match) || len(r.Results) != len(match) {
		t.Errorf("outcomes %v over %d results, want %d deleted", r.Counts, len(r.Results), len(match))
	}
	for _, n := range match {
		if env.NodeLeaseExists(t, n) {
			t.Errorf("matching leaked lease %s not deleted", n)
		}
	}
	for _, n := range similar {
		if !env.NodeLeaseExists(t, n) {
			t.Errorf("non-matching lease %s deleted", n)
		}
	}
	for class, names := range byClass {
		for _, n := range names {
			if !env.NodeLeaseExists(t, n) {
				t.Errorf("%s lease %s deleted by a name selection", class, n)
			}
		}
	}

	// An expression matching nothing deletes nothing.
	before := env.NodeLeaseNames(t)
	p, r := runSelected(t, Selection{NameRegexp: `nothing-is-named-so`}, false)
	if len(r.Results) != 0 || p.NotSelected == 0 || len(env.NodeLeaseNames(t)) != len(before) {
		t.Errorf("a selection matching nothing: %d results, %d not selected, %d→%d leases", len(r.Results), p.NotSelected, len(before), len(env.NodeLeaseNames(t)))
	}
}
