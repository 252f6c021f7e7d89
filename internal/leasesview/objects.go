package leasesview

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// ListObjects lists the Lease objects themselves, for kubectl's object formats (-o name,
// jsonpath, go-template, custom-columns): the same objects `kubectl get lease` prints, in the
// API server's order (namespace, then name), without managedFields. --class still selects (each
// lease is classified, and Nodes are listed only then); nodes, when not nil, keeps only the
// kube-node-lease leases named like one of its Nodes (-l).
//
// Unlike List, the objects are kept whole, as kubectl keeps them: a template may read any field.
func ListObjects(ctx context.Context, c *Clients, opts Options, nodes map[string]bool) ([]coordinationv1.Lease, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ns := opts.Namespace
	if nodes != nil {
		if ns != "" && ns != lease.NodeLeaseNamespace {
			return nil, nil // only node leases have Nodes to select
		}
		ns = lease.NodeLeaseNamespace
	}
	keep := newFilter(opts.Classes)
	now := opts.now()
	var out []coordinationv1.Lease
	// Nodes are needed only to classify node leases for --class.
	withNodes := keep != nil && (ns == "" || ns == lease.NodeLeaseNamespace)
	err := joinPages(ctx, c, ns, opts.LabelSelector, withNodes, opts.chunk(), func(uids map[string]types.UID, list *coordinationv1.LeaseList) {
		nodeUID := func(name string) (types.UID, bool) { uid, ok := uids[name]; return uid, ok }
		for i := range list.Items {
			l := &list.Items[i]
			if nodes != nil && !nodes[l.Name] {
				continue
			}
			if keep != nil && !keep.keep(classifyWith(l, nodeUID, now, opts.Lease, true).Class) {
				continue
			}
			out = append(out, *l)
		}
	})
	return out, err
}

// Lease rebuilds a Lease object from the row: every field the row keeps (name, namespace, UID,
// creation time, ownerReferences, the spec) in its place, the rest (labels, annotations,
// resourceVersion) empty. --sort-by on the tables reads it, so the same JSONPath sorts tables and
// object output alike.
func (it *Item) Lease() *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Namespace: it.Namespace, Name: it.Name, UID: it.UID,
			CreationTimestamp: it.CreationTimestamp},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       it.Holder,
			LeaseDurationSeconds: it.DurationSeconds,
			AcquireTime:          it.AcquireTime,
			RenewTime:            it.RenewTime,
			LeaseTransitions:     it.Transitions,
		},
	}
	if it.Strategy != "" {
		s := coordinationv1.CoordinatedLeaseStrategy(it.Strategy)
		l.Spec.Strategy = &s
	}
	if it.PreferredHolder != "" {
		l.Spec.PreferredHolder = &it.PreferredHolder
	}
	for _, o := range it.Owners {
		l.OwnerReferences = append(l.OwnerReferences, metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID})
	}
	return l
}
