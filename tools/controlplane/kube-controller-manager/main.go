// Command kube-controller-manager is the upstream controller manager (garbage collector and
// node lifecycle controller), built from k8s.io/kubernetes for the local test control plane.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
