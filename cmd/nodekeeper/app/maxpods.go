package app

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/maxpods"
)

// maxPodsOptions are the settings of `nodekeeper maxpods`: the command's own are in
// internal/maxpods; -o and the AWS connection flags are the tree's shared ones.
type maxPodsOptions struct {
	mp     maxpods.Options
	output *outputFlags
	aws    awsFlags
	types  []string // the instance types, set by Complete
}

func newMaxPodsCommand(g *globalOptions) *cobra.Command {
	o := &maxPodsOptions{aws: awsFlags{g: g},
		output: newOutputFlags("text", "output format: text, json or value (the number only, like the calculator)", "text", "json", "value")}
	cmd := &cobra.Command{
		Use:   "maxpods TYPE [TYPE...]",
		Short: "Recommended kubelet max-pods for an EC2 instance type with the Amazon VPC CNI",
		Long: `maxpods applies the formulas of the EKS max-pods calculator (max-pods-calculator.sh): ENIs of
the default network card x (IPv4 addresses per ENI - 1) + 2, with one ENI less under custom
networking, /28 prefixes (x16) under prefix delegation on Nitro types with VPC CNI 1.9+, and a
ceiling of 110 pods up to 30 vCPUs and 250 above unless --show-max-allowed.

Instance data comes from ` + eni.DataSource + `, without calling AWS.
With --aws, instance types that table does not know are read from EC2 (DescribeInstanceTypes,
read-only), and so is the real vCPU count where the ceiling depends on it; the output says where
each figure came from. Names are case-insensitive. The vCPU count only matters for the ceiling;
without --vcpus or --aws it is estimated from the size name.`,
		Example: `  nodekeeper maxpods m5.large                                # 29
  nodekeeper maxpods m5.large --custom-networking            # 20
  nodekeeper maxpods m5.large --prefix-delegation            # 110
  nodekeeper maxpods m5.large --prefix-delegation --show-max-allowed   # 434
  nodekeeper maxpods c6i.32xlarge --prefix-delegation -o json
  nodekeeper maxpods m8i.large --aws --region us-east-1      # a type newer than the built-in table`,
		Args:              cli.UsageArgs(cobra.MinimumNArgs(1)),
		ValidArgsFunction: completeInstanceTypes,
		RunE:              cli.RunOptions(o),
	}
	f := cmd.Flags()
	o.mp.AddFlags(f)
	o.output.AddFlags(f)
	o.aws.AddFlags(f)
	o.output.RegisterCompletion(cmd)
	return cmd
}

// Complete takes the instance types and -o, and loads the AWS clients with --aws (only then:
// without it no credentials are read; a failed load exits 1, not 2); --region and --profile
// without --aws are refused.
func (o *maxPodsOptions) Complete(cmd *cobra.Command, args []string) error {
	o.types, o.mp.Output = args, o.output.Output
	if !o.mp.AWS {
		return cli.FlagsNeed(cmd.Flags().Changed, "aws", "region", "profile")
	}
	clients, err := o.aws.clients(cmd.Context())
	if err != nil {
		return cli.WithExitCode(cli.ExitFailed, err)
	}
	o.mp.EC2 = clients.EC2
	return nil
}

// Validate refuses an unknown -o and a negative --vcpus, --max-eni or --reserved-enis.
func (o *maxPodsOptions) Validate() error {
	if err := o.output.Validate(); err != nil {
		return err
	}
	return o.mp.Validate()
}

// Run prints the figures.
func (o *maxPodsOptions) Run(ctx context.Context) error {
	return o.mp.Run(ctx, o.aws.g.streams.Out, o.aws.g.streams.ErrOut, o.types)
}
