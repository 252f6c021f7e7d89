// Package app is the nodekeeper command tree: NewRootCommand builds it from explicit
// constructors, without package state, so that main and the tests build a fresh tree each time
// and run it in-process with their own streams.
//
// Every subcommand follows kubectl's pattern: an options struct holding its flags, with
// Complete (flags to settings), Validate (refuse bad input with exit code 2) and Run (the work,
// delegated to an internal package). This package only wires flags to internal packages.
package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// awsLoader loads AWS clients (and so reads AWS credentials). Commands call it only behind
// --aws or --cloudwatch; tests give the in-memory AWS instead and check that the default paths
// never call it.
type awsLoader func(ctx context.Context, o nkaws.LoadOptions) (*allclients.Clients, error)

// globalOptions are what every subcommand may share: the streams, the kubectl connection flags
// and the AWS client loader.
type globalOptions struct {
	streams genericiooptions.IOStreams
	// kube holds the standard kubectl connection flags (--kubeconfig, --context, -n, --server,
	// ...), kubectl's set from client-go's clientcmd (not cli-runtime's ConfigFlags, which would
	// link its resource builder and kustomize). Only the commands that talk to a cluster show
	// them (addKubeFlags); the others would take them and do nothing with them.
	kube    *kube.ConnectionFlags
	loadAWS awsLoader
}

// NewRootCommand returns the nodekeeper command tree, reading from and writing to streams.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(streams, allclients.Load)
}

func newRootCommand(streams genericiooptions.IOStreams, loadAWS awsLoader) *cobra.Command {
	g := &globalOptions{streams: streams, kube: kube.NewKubectlConnectionFlags(), loadAWS: loadAWS}
	cmd := &cobra.Command{
		Use:   "nodekeeper",
		Short: "Keep the node side of a Kubernetes cluster honest",
		Long: `nodekeeper finds and safely removes leaked node leases, catches kubelets that run
without their Node object, explains every lease in a cluster, reads kube-apiserver audit logs to
reconstruct what happened to a lease, and checks node networking and kubelet settings that break
clusters at scale.`,
		// cobra applies its default distance (2) only on its own lookup path; RunE below calls
		// SuggestionsFor directly, which without it suggests only commands the word is a prefix
		// of ("lease"), not typos ("leeses").
		SuggestionsMinimumDistance: 2,
		// Without Args, cobra reports an unknown command while looking for it, before any
		// check of ours could give it the usage exit code; with them it comes here.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + orList(s) + "?"
			}
			return cli.UsageError(errors.New(msg + " (see --help)"))
		},
	}
	// Unknown flags and bad flag values are bad usage on every subcommand, and every command logs
	// through klog in the --logging-format asked for.
	cli.SetupRoot(cmd, streams.In, streams.Out, streams.ErrOut)

	cmd.AddCommand(
		newControllerCommand(g),
		newGCCommand(g),
		newLeasesCommand(g),
		newDoctorCommand(g),
		newExplainCommand(g),
		newBundleCommand(g),
		newMaxPodsCommand(g),
		newPlanCommand(g),
		newAuditCommand(g),
		newSandboxCommand(g),
		newVersionCommand(g),
	)
	warnOnStderr(cmd, streams)
	return cmd
}

// warnOnStderr sends what pflag writes while parsing (the warning for a deprecated flag) to
// standard error: cobra would copy it to the command's output, standard output, into the
// middle of -o json.
func warnOnStderr(cmd *cobra.Command, streams genericiooptions.IOStreams) {
	cmd.Flags().SetOutput(streams.ErrOut)
	for _, c := range cmd.Commands() {
		warnOnStderr(c, streams)
	}
}

// addKubeFlags adds the kubectl connection flags to a command that talks to a cluster.
func (g *globalOptions) addKubeFlags(cmd *cobra.Command) {
	g.kube.AddFlags(cmd.Flags())
	g.registerKubeCompletion(cmd)
}

// AsKubectlPlugin makes help and usage read `kubectl nodekeeper ...`, for the binary installed
// as kubectl-nodekeeper. Cobra takes a command's name from the first word of Use, so the
// plugin's two-word name goes into the display annotation that help and usage print.
func AsKubectlPlugin(root *cobra.Command) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl nodekeeper"
}
