package ultra

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// ListFloor is the floor of reading every lease and every Node: a LIST of the leases of all
// namespaces and a LIST of the Nodes, side by side, each in pages of chunk objects over protobuf,
// with no client-side rate limit, decoding into the typed objects and keeping nothing but the count.
// It is what a script author would write in Go, and below it only the API server's own time remains.
func ListFloor(ctx context.Context, cfg *rest.Config, chunk int64) (leases, nodes int, err error) {
	cfg = kube.Protobuf(rest.CopyConfig(cfg))
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, 0, err
	}
	var wg sync.WaitGroup
	var leaseErr, nodeErr error
	wg.Go(func() {
		leaseErr = pages(ctx, chunk, func(opts metav1.ListOptions) (string, int, error) {
			l, err := client.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, len(l.Items), nil
		}, &leases)
	})
	wg.Go(func() {
		nodeErr = pages(ctx, chunk, func(opts metav1.ListOptions) (string, int, error) {
			l, err := client.CoreV1().Nodes().List(ctx, opts)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, len(l.Items), nil
		}, &nodes)
	})
	wg.Wait()
	if leaseErr != nil {
		return 0, 0, leaseErr
	}
	return leases, nodes, nodeErr
}

// pages follows the continue tokens of one LIST, adding each page's length to n.
func pages(ctx context.Context, chunk int64, list func(metav1.ListOptions) (string, int, error), n *int) error {
	opts := metav1.ListOptions{Limit: chunk}
	for {
		next, got, err := list(opts)
		if err != nil {
			return err
		}
		*n += got
		if next == "" {
			return ctx.Err()
		}
		opts.Continue = next
	}
}
