package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/buildinfo"
	"github.com/nodekeeper/nodekeeper/internal/cli"
)

// versionOptions are the settings of `nodekeeper version`.
type versionOptions struct {
	g      *globalOptions
	output *outputFlags
}

func newVersionCommand(g *globalOptions) *cobra.Command {
	o := &versionOptions{g: g, output: newOutputFlags("text", "output format: text, json or yaml", buildinfo.Formats...)}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the nodekeeper version, commit, build date, Go version and platform",
		Example: `  nodekeeper version
  nodekeeper version -o json`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.output.AddFlags(cmd.Flags())
	o.output.RegisterCompletion(cmd)
	return cmd
}

// Complete has nothing to do: -o is the only setting.
func (o *versionOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate refuses an unknown -o.
func (o *versionOptions) Validate() error { return o.output.Validate() }

// Run prints the build record.
func (o *versionOptions) Run(context.Context) error {
	return buildinfo.Print(o.g.streams.Out, buildinfo.Get(), o.output.Output)
}
