package kube

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodesResource is the core/v1 nodes resource. nodekeeper reads Nodes as metadata only (their
// name and UID decide everything it does; status is the bulk of a Node object), through a
// metadata client or informer.
var NodesResource = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// StripLease drops what nodekeeper never reads from a lease (managedFields, about a third of a
// node lease's size), for listings and informer caches. It is a cache.TransformFunc: any other
// object passes through unchanged.
func StripLease(obj any) (any, error) {
	if l, ok := obj.(*coordinationv1.Lease); ok {
		l.ManagedFields = nil
	}
	return obj, nil
}

// StripMetadata drops managedFields from object metadata (Nodes read as metadata), for
// informer caches. Any other object passes through unchanged.
func StripMetadata(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		m.ManagedFields = nil
	}
	return obj, nil
}
