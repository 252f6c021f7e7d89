package leasesview

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// SelectorHelp is the help of -l/--selector: the leases' own labels, as kubectl's -l.
const SelectorHelp = "selector (label query) on the leases' own labels, as kubectl's -l, e.g. " +
	"apiserver.kubernetes.io/identity=kube-apiserver (supports '=', '==', '!=', 'in', 'notin', 'exists'); for the labels of the leases' Nodes use --node-selector"

// NodeSelectorHelp is the help of --node-selector: what it selects, and what happens to a lease
// whose Node is gone.
const NodeSelectorHelp = "only the node leases of Nodes whose labels match this selector, e.g. eks.amazonaws.com/nodegroup=ng-1 " +
	"or karpenter.sh/nodepool=default (supports '=', '==', '!=', 'in', 'notin', 'exists'); a lease whose Node is gone has no labels " +
	"to match, so --node-selector leaves out leaked, zombie and owner-missing leases (list those with --class leaked,zombie,owner-missing " +
	"and no --node-selector), and every lease outside kube-node-lease"

// ParseSelector checks a --node-selector value before anything is listed.
func ParseSelector(s string) error { return parseSelector("--node-selector", s) }

// parseSelector checks the label selector s of flag ("" selects everything).
func parseSelector(flag, s string) error {
	if _, err := labels.Parse(s); err != nil {
		return fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return nil
}

// SelectNodes returns the names of the Nodes matching selector, from a paginated, metadata-only
// LIST that the API server filters.
func SelectNodes(ctx context.Context, meta metadata.Interface, selector string, chunk int64) (map[string]bool, error) {
	if err := ParseSelector(selector); err != nil {
		return nil, err
	}
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	names := map[string]bool{}
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: chunk, LabelSelector: selector}, meta.Resource(kube.NodesResource).List, func(list *metav1.PartialObjectMetadataList) error {
		for i := range list.Items {
			names[list.Items[i].Name] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// SelectNodeLeases keeps in r only the kube-node-lease leases named like one of nodes, then the
// classes of classes (none: all). The summary is recomputed over the selected leases (before
// --class, as always), so its counts describe the node group, not the cluster. r must have been
// listed without a class filter.
func SelectNodeLeases(r *Report, nodes map[string]bool, classes []lease.Class) {
	selected := r.Items[:0]
	for _, it := range r.Items {
		if it.Namespace == lease.NodeLeaseNamespace && nodes[it.Name] {
			selected = append(selected, it)
		}
	}
	r.Summary = Summarize(selected)
	keep := newFilter(classes)
	shown := selected[:0]
	for _, it := range selected {
		if keep.keep(it.Class) {
			shown = append(shown, it)
		}
	}
	r.Items, r.ClassFilter = shown, classes
	r.Summary.Shown = len(shown)
	r.LeaseCandidates = nil // leader candidates belong to no Node
}
