package app

import (
	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/controller/command"
)

// newControllerCommand is `nodekeeper controller`: the controller's own command (the one the
// image's nodekeeper-controller binary runs), with the CLI's kubectl flags and their completion,
// for running it out of the cluster.
func newControllerCommand(g *globalOptions) *cobra.Command {
	cmd := command.New("nodekeeper controller", g.kube)
	g.addKubeFlags(cmd)
	return cmd
}
