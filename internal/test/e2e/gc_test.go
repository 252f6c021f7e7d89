//go:build linux

package e2e

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
)

// gcResult is the part of `gc -o json` (GCResult) a script reads.
type gcResult struct {
	Kind    string `json:"kind"`
	DryRun  bool   `json:"dryRun"`
	Summary struct {
		Total   int `json:"total"`
		Deleted int `json:"deleted"`
		Left    int `json:"left"`
	} `json:"summary"`
	Results []struct {
		Name    string `json:"name"`
		Outcome string `json:"outcome"`
	} `json:"results"`
}

// outcomes maps each lease of the result to its outcome.
func (r gcResult) outcomes() map[string]string {
	m := map[string]string{}
	for _, res := range r.Results {
		m[res.Name] = res.Outcome
	}
	return m
}

func TestGC(t *testing.T) {
	// gc acts on the whole cluster: start from an empty kube-node-lease so that "exactly the
	// leaked leases" means exactly this test's.
	env.DeleteNodesAndLeases(t)
	c := seedCluster(t, 5)
	u, _ := eksUser(t)
	leaked := append([]string(nil), c.leaked...)
	sort.Strings(leaked)

	t.Run("no terminal, no --yes", func(t *testing.T) {
		r := u.expect(exitUsage, "gc")
		mustContain(t, r, r.stderr, "--yes")
		for _, name := range leaked {
			if !env.NodeLeaseExists(t, name) {
				t.Fatalf("gc without confirmation deleted %s", name)
			}
		}
	})

	t.Run("dry run", func(t *testing.T) {
		r := u.expect(exitOK, "gc", "--dry-run", "-o", "json")
		res := decode[gcResult](t, r, "GCResult")
		// In a dry run, "deleted" counts the leases that would be.
		if !res.DryRun || res.Summary.Deleted != len(leaked) || res.Summary.Total != len(leaked)+2 {
			t.Errorf("dry run summary %+v:\n%s", res.Summary, r)
		}
		if got := slices.Sorted(maps.Keys(res.outcomes())); strings.Join(got, " ") != strings.Join(leaked, " ") {
			t.Errorf("dry run would act on %v, want the leaked %v:\n%s", got, leaked, r)
		}
		for name, outcome := range res.outcomes() {
			if outcome != "would-delete" {
				t.Errorf("dry run: %s %s", name, outcome)
			}
		}
		// stdout carries only the report; the plan went to stderr.
		mustContain(t, r, r.stderr, "leaked")
		names := env.NodeLeaseNames(t)
		for _, name := range append([]string{c.healthy, c.zombie}, leaked...) {
			if !names[name] {
				t.Errorf("the dry run deleted %s", name)
			}
		}

		// The table a person reads: the plan and the counts.
		r = u.expect(exitOK, "gc", "--dry-run")
		mustContain(t, r, r.stdout, "leaked", "dry run")
	})

	t.Run("--yes", func(t *testing.T) {
		r := u.expect(exitOK, "gc", "--yes", "-o", "json")
		res := decode[gcResult](t, r, "GCResult")
		if res.DryRun || res.Summary.Deleted != len(leaked) {
			t.Errorf("summary %+v, want %d deleted:\n%s", res.Summary, len(leaked), r)
		}
		if got := slices.Sorted(maps.Keys(res.outcomes())); strings.Join(got, " ") != strings.Join(leaked, " ") {
			t.Errorf("gc acted on %v, want the leaked %v:\n%s", got, leaked, r)
		}
		for name, outcome := range res.outcomes() {
			if outcome != "deleted" {
				t.Errorf("%s: %s", name, outcome)
			}
		}
		names := env.NodeLeaseNames(t)
		for _, name := range leaked {
			if names[name] {
				t.Errorf("leaked lease %s is still there", name)
			}
		}
		for _, name := range []string{c.healthy, c.zombie} {
			if !names[name] {
				t.Errorf("gc deleted %s, which is not leaked", name)
			}
		}
		if len(names) != 2 {
			t.Errorf("kube-node-lease holds %v, want only %s and %s", slices.Sorted(maps.Keys(names)), c.healthy, c.zombie)
		}

		// Nothing is left to do: a second run deletes nothing and exits 0.
		r = u.expect(exitOK, "gc", "--yes", "-o", "json")
		if res := decode[gcResult](t, r, "GCResult"); res.Summary.Deleted != 0 || len(res.Results) != 0 {
			t.Errorf("a second gc acted: %+v\n%s", res.Summary, r)
		}
	})
}
