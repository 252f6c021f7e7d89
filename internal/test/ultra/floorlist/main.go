// Command floorlist is the whole-process floor of `nodekeeper leases -A` in the ultra benchmark
// (internal/test/ultra): ultra.ListFloor in a process of its own, printing only the counts. It is a
// benchmark tool, not shipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/test/ultra"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	chunk := flag.Int64("chunk-size", kube.DefaultChunkSize, "objects per LIST page")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		var leases, nodes int
		if leases, nodes, err = ultra.ListFloor(context.Background(), cfg, *chunk); err == nil {
			fmt.Printf("%d leases, %d nodes\n", leases, nodes)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "floorlist:", err)
	os.Exit(1)
}
