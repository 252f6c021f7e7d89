package kube

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// LeaseInformer is one informer of the Leases in namespace ("" for all), listed and watched
// through client with tweak (nil for none) applied to every request: what client-go's generated
// Lease informer builds, without its kubernetes.Interface (see Interface for why) and without a
// SharedInformerFactory, whose ForResource links every API group's informer and lister.
func LeaseInformer(client Interface, namespace string, indexers cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	leases := func() interface {
		List(context.Context, metav1.ListOptions) (*coordinationv1.LeaseList, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	} {
		return client.CoordinationV1().Leases(namespace)
	}
	return newInformer(client, tweak, &coordinationv1.Lease{}, indexers,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return leases().List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return leases().Watch(ctx, o)
		})
}

// NodeInformer is one informer of whole Nodes through client, as LeaseInformer.
func NodeInformer(client Interface, indexers cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return newInformer(client, tweak, &corev1.Node{}, indexers,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Nodes().Watch(ctx, o)
		})
}

// newInformer passes client to the reflector, which asks it whether it supports watch-list
// semantics (the fake clientset says it does not).
func newInformer(client any, tweak func(*metav1.ListOptions), example runtime.Object, indexers cache.Indexers,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	apply := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, apply(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, apply(o))
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), example,
		cache.SharedIndexInformerOptions{Indexers: indexers})
}
