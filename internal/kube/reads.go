package kube

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
)

// ListNodes reads the metadata of every Node, page by page (see Pages), managedFields dropped.
// page handles one page before the next is requested.
func ListNodes(ctx context.Context, meta metadata.Interface, chunk int64, page func(*metav1.PartialObjectMetadataList) error) error {
	nodes := meta.Resource(NodesResource)
	_, err := Pages(ctx, "nodes", metav1.ListOptions{Limit: chunk}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		list, err := nodes.List(ctx, o)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			list.Items[i].ManagedFields = nil
		}
		return list.Continue, page(list)
	})
	return err
}

// ListLeases reads every lease of namespace ("" for all namespaces), page by page (see Pages),
// managedFields dropped. page handles one page before the next is requested; the list's
// RemainingItemCount, when the API server sends it, tells how many are still to come.
func ListLeases(ctx context.Context, leases coordinationclient.LeasesGetter, namespace string, chunk int64, page func(*coordinationv1.LeaseList) error) error {
	what := "leases"
	if namespace != "" {
		what += " in " + namespace
	}
	c := leases.Leases(namespace)
	_, err := Pages(ctx, what, metav1.ListOptions{Limit: chunk}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		list, err := c.List(ctx, o)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			list.Items[i].ManagedFields = nil
		}
		return list.Continue, page(list)
	})
	return err
}
