// Command nodekeeper keeps the node side of a Kubernetes cluster honest: it finds and safely
// removes leaked node leases, catches kubelets running without their Node, explains every lease,
// reads kube-apiserver audit logs and checks node networking settings that break clusters at scale.
//
// This package only wires flags to the internal packages: one file per subcommand, each of which
// adds itself to rootCmd from an init function so that subcommands never edit a shared file.
package main

import (
	"fmt"
	"os"

	"k8s.io/klog/v2"
)

func main() {
	defer klog.Flush()
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(exitCode(err))
	}
}
