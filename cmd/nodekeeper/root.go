package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/klog/v2"
)

// kubeFlags are the standard kubectl connection flags (--kubeconfig, --context, -n, --server, ...),
// shared by every subcommand that talks to a cluster.
var kubeFlags = genericclioptions.NewConfigFlags(true)

var rootCmd = newRootCmd()

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nodekeeper",
		Short: "Keep the node side of a Kubernetes cluster honest",
		Long: `nodekeeper finds and safely removes leaked node leases, catches kubelets that run
without their Node object, explains every lease in a cluster, reads kube-apiserver audit logs to
reconstruct what happened to a lease, and checks node networking and kubelet settings that break
clusters at scale.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Installed as kubectl-nodekeeper, the binary is a kubectl plugin: `kubectl nodekeeper leases`.
	// Cobra takes a command's name from the first word of Use, so the plugin's two-word name
	// goes into the display annotation that help and usage print.
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-nodekeeper") {
		cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl nodekeeper"}
	}
	kubeFlags.AddFlags(cmd.PersistentFlags())
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("vmodule"))
	return cmd
}

// exitError carries a specific process exit code (for example the doctor's severity or gc's
// partial-failure code) up to main without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitCode wraps err so that main exits with code; a nil err stays nil.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
