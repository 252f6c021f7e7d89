// Command nodekeeper keeps the node side of a Kubernetes cluster honest: it finds and safely
// removes leaked node leases, catches kubelets running without their Node, explains every lease,
// reads kube-apiserver audit logs and checks node networking settings that break clusters at scale.
//
// The command tree lives in package app (so that tests run it in-process); this file only
// connects it to the process: the standard streams, the signals and the exit code.
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/cmd/nodekeeper/app"
	"github.com/nodekeeper/nodekeeper/internal/cli"
)

func main() { os.Exit(run()) }

func run() int {
	defer klog.Flush()
	// One signal handler for every subcommand: the first SIGINT or SIGTERM cancels the context
	// (gc stops and reports, the controller and the sandbox shut down cleanly, a command blocked
	// on its input returns at once); once it has, the default handling is restored so that a
	// second Ctrl-C ends the process at once. A run the signal cut short exits 130 or 143.
	ctx, stop := cli.NotifyContext(context.Background())
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root := app.NewRootCommand(streams)
	// Installed as kubectl-nodekeeper, the binary is a kubectl plugin: `kubectl nodekeeper leases`.
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-nodekeeper") {
		app.AsKubectlPlugin(root)
	}
	return cli.Execute(ctx, root, streams.ErrOut)
}
