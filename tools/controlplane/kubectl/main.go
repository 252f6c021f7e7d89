// Command kubectl is built here only as a fallback for machines without a kubectl of their own;
// the tests prefer the kubectl on PATH.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() { os.Exit(cli.Run(cmd.NewDefaultKubectlCommand())) }
