package app

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// Shell completion beyond cobra's own: instance types, check codes and names, --fail-on, and
// the kubeconfig's contexts and the cluster's namespaces for the connection flags. Every
// function answers with what it has and never prints an error: a completion that fails
// completes nothing.

// completionTimeout bounds the one live call completion makes (namespaces): a TAB must not
// hang on a cluster that does not answer.
const completionTimeout = 3 * time.Second

// completionRateLimit is client-go's usual limit: a TAB sends a request or two.
var completionRateLimit = kube.RateLimit{QPS: 5, Burst: 10}

// completeInstanceTypes completes instance type arguments from the built-in limits table,
// case-insensitively ("M5.L<TAB>" offers m5.large ...).
func completeInstanceTypes(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	prefix := strings.ToLower(toComplete)
	var out []string
	for _, name := range eni.Types() {
		if strings.HasPrefix(strings.ToLower(name), prefix) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRules completes --ignore, a comma-separated list of the catalog's check codes and
// names, each code with its name as the description.
func completeRules(cat *findings.Catalog) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var all []string
		titles := map[string]string{}
		for _, r := range cat.Rules() {
			all = append(all, r.Code, r.Name)
			titles[r.Code], titles[r.Name] = r.Name, r.Code
		}
		sort.Strings(all)
		out := completeList(all, toComplete)
		for i, c := range out {
			last := c[strings.LastIndex(c, ",")+1:]
			out[i] = c + "\t" + titles[last]
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// registerFailOnCompletion completes --fail-on with its values.
func registerFailOnCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions(findings.FailOnNames, cobra.ShellCompDirectiveNoFileComp))
}

// registerKubeCompletion completes --context, --cluster and --user from the kubeconfig and -n
// from the cluster.
func (g *globalOptions) registerKubeCompletion(cmd *cobra.Command) {
	fromKubeconfig := func(names func() []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(names(), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("context", fromKubeconfig(func() []string { return g.kubeconfigNames("context") }))
	_ = cmd.RegisterFlagCompletionFunc("cluster", fromKubeconfig(func() []string { return g.kubeconfigNames("cluster") }))
	_ = cmd.RegisterFlagCompletionFunc("user", fromKubeconfig(func() []string { return g.kubeconfigNames("user") }))
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(g.namespaces(c.Context()), toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// kubeconfigNames lists the contexts, clusters or users of the kubeconfig the flags select
// (--kubeconfig, else KUBECONFIG, else the default file); none when it does not load.
func (g *globalOptions) kubeconfigNames(kind string) []string {
	raw, err := g.kube.RawConfig()
	if err != nil {
		return nil
	}
	switch kind {
	case "context":
		return slices.Sorted(maps.Keys(raw.Contexts))
	case "cluster":
		return slices.Sorted(maps.Keys(raw.Clusters))
	case "user":
		return slices.Sorted(maps.Keys(raw.AuthInfos))
	}
	return nil
}

// namespaces lists the cluster's namespaces with the connection flags given so far; nothing when
// the cluster does not answer within completionTimeout or may not be asked.
func (g *globalOptions) namespaces(ctx context.Context) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := kube.NewOptions(g.kube, "completion", completionRateLimit).RESTConfig()
	if err != nil {
		return nil
	}
	cfg.Timeout = completionTimeout
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	var out []string
	err = kube.List(ctx, "namespaces", metav1.ListOptions{Limit: kube.DefaultChunkSize}, clients.Kube.CoreV1().Namespaces().List, func(list *corev1.NamespaceList) error {
		for _, ns := range list.Items {
			out = append(out, ns.Name)
		}
		return nil
	})
	if err != nil {
		return nil
	}
	sort.Strings(out)
	return out
}

// withPrefix keeps the names that start with prefix.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// nodeNames lists the cluster's Node names (metadata only) with the connection flags given so
// far, for explain's TARGET; nothing when the cluster does not answer within completionTimeout.
func (g *globalOptions) nodeNames(ctx context.Context) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := kube.NewOptions(g.kube, "completion", completionRateLimit).RESTConfig()
	if err != nil {
		return nil
	}
	cfg.Timeout = completionTimeout
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	var out []string
	err = kube.ListNodes(ctx, clients.Metadata, kube.DefaultChunkSize, func(list *metav1.PartialObjectMetadataList) error {
		for _, n := range list.Items {
			out = append(out, n.Name)
		}
		return nil
	})
	if err != nil {
		return nil
	}
	sort.Strings(out)
	return out
}
