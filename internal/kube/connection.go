package kube

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConnectionFlags are kubectl's connection flags (--kubeconfig, --context, --cluster, --user,
// --server, --token, -n, ...) built from client-go's clientcmd alone. The controller's binary
// uses them instead of cli-runtime's ConfigFlags, which would link cli-runtime's printers into
// it. Their meaning is kubectl's: an explicit --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account.
type ConnectionFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

// NewConnectionFlags returns flags that select the default kubeconfig.
func NewConnectionFlags() *ConnectionFlags { return &ConnectionFlags{} }

// AddFlags registers the flags on fs under kubectl's names.
func (c *ConnectionFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "path to the kubeconfig file to use for CLI requests")
	clientcmd.BindOverrideFlags(&c.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
}

// ToRESTConfig loads the kubeconfig the flags select, as kubectl does, falling back on the
// in-cluster configuration when no kubeconfig is found.
func (c *ConnectionFlags) ToRESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	overrides := c.overrides
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides).ClientConfig()
}
