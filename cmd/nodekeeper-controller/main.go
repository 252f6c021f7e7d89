// Command nodekeeper-controller is the in-cluster controller alone: it deletes leaked node
// leases after a live Node check, adopts unowned ones and reports zombie kubelets. It is what the
// container image runs. Its flags are `nodekeeper controller`'s; it links neither the CLI's other
// commands, nor their readers, printers and AWS SDK, nor the sandbox (internal/test/deploytest's deps
// test holds it to that).
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/controller/command"
)

func main() { os.Exit(run()) }

func run() int {
	defer klog.Flush()
	// The first SIGTERM (the kubelet stopping the pod) or SIGINT cancels the context: the leader
	// gives up its lease and the endpoints shut down. A second signal ends the process at once.
	ctx, stop := cli.NotifyContext(context.Background())
	defer stop()
	args := os.Args[1:]
	// Manifests written for the CLI's image ran `nodekeeper controller ...`; an image upgraded
	// under them must not crash-loop on the subcommand's name.
	if len(args) > 0 && args[0] == "controller" {
		fmt.Fprintln(os.Stderr, `warning: nodekeeper-controller takes no "controller" argument (the image no longer runs the CLI); drop it from the container's args`)
		args = args[1:]
	}
	root := command.NewRoot(os.Stdin, os.Stdout, os.Stderr)
	root.SetArgs(args)
	return cli.Execute(ctx, root, os.Stderr)
}
