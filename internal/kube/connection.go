package kube

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// ConnectionFlags are kubectl's connection flags (--kubeconfig, --context, --cluster, --user,
// --server, --token, -n, ...) built from client-go's clientcmd alone: both binaries use them
// instead of cli-runtime's genericclioptions.ConfigFlags, whose package links cli-runtime's
// resource builder and kustomize. Their meaning is kubectl's: an explicit --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account.
type ConnectionFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// kubectl marks the CLI's flags (NewKubectlConnectionFlags): kubectl's set and defaults.
	kubectl bool
	// cacheDir is --cache-dir, accepted as kubectl accepts it: nodekeeper keeps no discovery or
	// HTTP cache, so it changes nothing.
	cacheDir string
	// userExtra is --as-user-extra, KEY=VALUE, repeated.
	userExtra []string
}

// NewConnectionFlags returns the controller's connection flags: clientcmd's recommended set,
// selecting the default kubeconfig.
func NewConnectionFlags() *ConnectionFlags { return &ConnectionFlags{} }

// NewKubectlConnectionFlags returns the CLI's connection flags: exactly the flags and defaults
// kubectl's own (cli-runtime's ConfigFlags) give every kubectl command, so that a flag a user
// passes to kubectl means the same to nodekeeper.
func NewKubectlConnectionFlags() *ConnectionFlags {
	return &ConnectionFlags{kubectl: true, overrides: clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults, Timeout: "0"}}
}

// AddFlags registers the flags on fs under kubectl's names.
func (c *ConnectionFlags) AddFlags(fs *pflag.FlagSet) {
	if !c.kubectl {
		fs.StringVar(&c.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "path to the kubeconfig file to use for CLI requests")
		clientcmd.BindOverrideFlags(&c.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
		return
	}
	// kubectl's flags, with its help texts, in its order.
	o := &c.overrides
	fs.StringVar(&c.kubeconfig, clientcmd.RecommendedConfigPathFlag, c.kubeconfig, "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVar(&c.cacheDir, "cache-dir", defaultCacheDir(), "Default cache directory")
	fs.StringVar(&o.AuthInfo.ClientCertificate, clientcmd.FlagCertFile, "", "Path to a client certificate file for TLS")
	fs.StringVar(&o.AuthInfo.ClientKey, clientcmd.FlagKeyFile, "", "Path to a client key file for TLS")
	fs.StringVar(&o.AuthInfo.Token, clientcmd.FlagBearerToken, "", "Bearer token for authentication to the API server")
	fs.StringVar(&o.AuthInfo.Impersonate, clientcmd.FlagImpersonate, "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	fs.StringVar(&o.AuthInfo.ImpersonateUID, clientcmd.FlagImpersonateUID, "", "UID to impersonate for the operation.")
	fs.StringArrayVar(&o.AuthInfo.ImpersonateGroups, clientcmd.FlagImpersonateGroup, nil, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	fs.StringArrayVar(&c.userExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	fs.StringVar(&o.Context.Cluster, clientcmd.FlagClusterName, "", "The name of the kubeconfig cluster to use")
	fs.StringVar(&o.Context.AuthInfo, clientcmd.FlagAuthInfoName, "", "The name of the kubeconfig user to use")
	fs.StringVarP(&o.Context.Namespace, clientcmd.FlagNamespace, "n", "", "If present, the namespace scope for this CLI request")
	fs.StringVar(&o.CurrentContext, clientcmd.FlagContext, "", "The name of the kubeconfig context to use")
	fs.StringVarP(&o.ClusterInfo.Server, clientcmd.FlagAPIServer, "s", "", "The address and port of the Kubernetes API server")
	fs.StringVar(&o.ClusterInfo.TLSServerName, clientcmd.FlagTLSServerName, "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	fs.BoolVar(&o.ClusterInfo.InsecureSkipTLSVerify, clientcmd.FlagInsecure, false, "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	fs.StringVar(&o.ClusterInfo.CertificateAuthority, clientcmd.FlagCAFile, "", "Path to a cert file for the certificate authority")
	fs.StringVar(&o.Timeout, clientcmd.FlagTimeout, o.Timeout, "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	fs.BoolVar(&o.ClusterInfo.DisableCompression, clientcmd.FlagDisableCompression, false, "If true, opt-out of response compression for all requests to the server")
	fs.StringVar(&o.ClusterInfo.ProxyURL, clientcmd.FlagProxyURL, "", "Proxy URL to use for requests to the API server")
}

// defaultCacheDir is kubectl's default --cache-dir: $KUBECACHEDIR, else ~/.kube/cache.
func defaultCacheDir() string {
	if dir := os.Getenv("KUBECACHEDIR"); dir != "" {
		return dir
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}

// ClientConfig is the kubeconfig the flags select, with the flags applied over it, loaded when
// asked (kubectl's deferred loading).
func (c *ConnectionFlags) ClientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	overrides := c.overrides
	if c.kubectl {
		// As kubectl: without a kubeconfig (and outside a cluster) it talks to the default
		// server rather than failing on an empty configuration.
		rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
		overrides.AuthInfo.ImpersonateUserExtra = userExtras(c.userExtra)
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
}

// userExtras reads --as-user-extra KEY=VALUE values as kubectl does: a value without "=" is
// ignored, a key given twice keeps both values.
func userExtras(values []string) map[string][]string {
	if len(values) == 0 {
		return nil
	}
	extras := map[string][]string{}
	for _, v := range values {
		key, value, ok := strings.Cut(v, "=")
		if !ok {
			continue
		}
		extras[key] = append(extras[key], value)
	}
	return extras
}

// ToRESTConfig loads the kubeconfig the flags select, as kubectl does, falling back on the
// in-cluster configuration when no kubeconfig is found.
func (c *ConnectionFlags) ToRESTConfig() (*rest.Config, error) {
	return c.ClientConfig().ClientConfig()
}

// RawConfig is the kubeconfig the flags select as read, without the flags applied: the
// contexts, clusters and users completion offers and the EKS cluster name is read from.
func (c *ConnectionFlags) RawConfig() (clientcmdapi.Config, error) {
	return c.ClientConfig().RawConfig()
}

// Namespace is -n as given ("" when not given; the kubeconfig context's namespace is not read).
func (c *ConnectionFlags) Namespace() string { return c.overrides.Context.Namespace }

// Context is --context as given.
func (c *ConnectionFlags) Context() string { return c.overrides.CurrentContext }

// Cluster is --cluster as given: the kubeconfig cluster entry to use.
func (c *ConnectionFlags) Cluster() string { return c.overrides.Context.Cluster }
