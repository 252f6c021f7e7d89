// Command rawdelete is the reference of gc's whole-process benchmark (BenchmarkGCProcessVsRaw):
// the fastest plain way to empty kube-node-lease, as a script author would write it in Go. It
// lists the leases (protobuf, pages of 500 like gc's default --chunk-size), then deletes every
// one with 64 protobuf DELETEs in flight: no Node check, no preconditions, no client-side rate
// limit, nothing printed but the count. With -prefix it deletes only the leases whose name starts with it, so
// that a cluster's live leases stay (the ultra benchmark's raw DELETE rate). It is a benchmark tool, not shipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	workers := flag.Int("workers", 64, "DELETEs in flight")
	prefix := flag.String("prefix", "", "delete only the leases whose name starts with this (the leaked set of a cluster whose live leases stay)")
	flag.Parse()
	if err := run(*kubeconfig, *workers, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "rawdelete:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, workers int, prefix string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(kube.Protobuf(cfg))
	if err != nil {
		return err
	}
	ctx := context.Background()
	leases := client.CoordinationV1().Leases(lease.NodeLeaseNamespace)
	var names []string
	err = kube.ListLeases(ctx, client.CoordinationV1(), lease.NodeLeaseNamespace, kube.DefaultChunkSize, func(l *coordinationv1.LeaseList) error {
		for i := range l.Items {
			if strings.HasPrefix(l.Items[i].Name, prefix) {
				names = append(names, l.Items[i].Name)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, max(len(names), 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				if err := leases.Delete(ctx, names[i], metav1.DeleteOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d deleted, %d failed\n", len(names)-int(failed.Load()), failed.Load())
	if failed.Load() > 0 {
		return fmt.Errorf("%d deletes failed", failed.Load())
	}
	return nil
}
