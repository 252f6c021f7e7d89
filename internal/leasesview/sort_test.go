package leasesview

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// TestSortItemsMatchesTheComparison: SortItems (bucketed by class rank, indices sorted, items
// moved once) gives the order its comparison defines, for rows in the API server's order, in
// reverse and shuffled, with classes the taxonomy does not know (which share the last rank).
func TestSortItemsMatchesTheComparison(t *testing.T) {
	classes := append(lease.Classes(), "future-b", "future-a")
	rng := rand.New(rand.NewPCG(1, 2))
	var items []Item
	for i := range 2000 {
		ns := []string{"kube-node-lease", "kube-system", "team-a"}[rng.IntN(3)]
		items = append(items, Item{Namespace: ns, Name: fmt.Sprintf("ip-10-0-%d", rng.IntN(500)), UID: types.UID(fmt.Sprint(i)),
			Class: classes[rng.IntN(len(classes))]})
	}
	want := slices.Clone(items)
	sort.SliceStable(want, func(i, j int) bool { return compareItems(&want[i], &want[j]) < 0 })
	apiOrder := slices.Clone(items)
	sort.SliceStable(apiOrder, func(i, j int) bool {
		if apiOrder[i].Namespace != apiOrder[j].Namespace {
			return apiOrder[i].Namespace < apiOrder[j].Namespace
		}
		return apiOrder[i].Name < apiOrder[j].Name
	})
	reversed := slices.Clone(apiOrder)
	slices.Reverse(reversed)
	for name, in := range map[string][]Item{"shuffled": items, "api order": apiOrder, "reversed": reversed} {
		got := slices.Clone(in)
		SortItems(got)
		for i := range got {
			// Equal keys (same class, namespace and name) may come in any order: compare keys.
			if compareItems(&got[i], &want[i]) != 0 {
				t.Fatalf("%s: row %d is %s %s/%s, want %s %s/%s", name, i, got[i].Class, got[i].Namespace, got[i].Name, want[i].Class, want[i].Namespace, want[i].Name)
			}
		}
		seen := map[string]bool{}
		for _, it := range got {
			seen[string(it.UID)] = true
		}
		if len(seen) != len(in) {
			t.Fatalf("%s: %d distinct rows after sorting, want %d", name, len(seen), len(in))
		}
	}
	if rank("future-a") != rank("future-b") || compareItems(&Item{Class: "future-a"}, &Item{Class: "future-b"}) >= 0 {
		t.Error("unknown classes share the last rank and sort by name")
	}
}
