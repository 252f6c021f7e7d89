package kube

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
)

// ObjectList is a typed list (*coordinationv1.LeaseList, *metav1.PartialObjectMetadataList, ...):
// List reads it page by page through its continue token.
type ObjectList interface {
	runtime.Object
	GetContinue() string
}

// List reads every object opts selects, page by page (see Pages: opts.Limit is the page size),
// with managedFields dropped; list is the typed client's List method and what names the resource
// in errors. page handles one page before the next is requested; the list's RemainingItemCount,
// when the API server sends it, tells how many are still to come.
func List[L ObjectList](ctx context.Context, what string, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (L, error), page func(L) error) error {
	_, err := Pages(ctx, what, opts, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return "", err
		}
		if err := apimeta.EachListItem(l, dropManagedFields); err != nil {
			return "", err
		}
		return l.GetContinue(), page(l)
	})
	return err
}

// dropManagedFields is what nodekeeper never reads from a listed object (about a third of a
// node lease's size).
func dropManagedFields(obj runtime.Object) error {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return nil
}

// ListNodes reads the metadata of every Node (see List).
func ListNodes(ctx context.Context, meta metadata.Interface, chunk int64, page func(*metav1.PartialObjectMetadataList) error) error {
	return List(ctx, "nodes", metav1.ListOptions{Limit: chunk}, meta.Resource(NodesResource).List, page)
}

// ListLeases reads every lease of namespace ("" for all namespaces; see List).
func ListLeases(ctx context.Context, leases coordinationclient.LeasesGetter, namespace string, chunk int64, page func(*coordinationv1.LeaseList) error) error {
	return ListLeasesSelected(ctx, leases, namespace, "", chunk, page)
}

// ListLeasesSelected reads the leases of namespace whose labels match selector (a label selector
// the API server applies, as kubectl's -l; "" for every lease).
func ListLeasesSelected(ctx context.Context, leases coordinationclient.LeasesGetter, namespace, selector string, chunk int64, page func(*coordinationv1.LeaseList) error) error {
	what := "leases"
	if namespace != "" {
		what += " in " + namespace
	}
	return List(ctx, what, metav1.ListOptions{Limit: chunk, LabelSelector: selector}, leases.Leases(namespace).List, page)
}
