package app

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// awsFlags are the AWS connection flags of the commands that can talk to AWS.
type awsFlags struct {
	g               *globalOptions
	region, profile string
}

func (a *awsFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&a.region, "region", "", "AWS region (default: the AWS configuration's, or the region of an EKS cluster ARN given to --cluster)")
	f.StringVar(&a.profile, "profile", "", "AWS profile from the shared config and credentials files (default: the SDK's default chain)")
}

// clients loads the AWS clients, taking the region from an EKS cluster ARN when none was given.
func (a *awsFlags) clients(ctx context.Context) (*nkaws.Clients, error) {
	o := nkaws.LoadOptions{Profile: a.profile, Region: a.region}
	if o.Region == "" {
		_, o.Region = a.g.eksCluster()
	}
	return a.g.loadAWS(ctx, o)
}

// eksClusterName is the EKS cluster named by a kubeconfig cluster name: the ARN that
// `aws eks update-kubeconfig` uses (arn:aws:eks:REGION:ACCOUNT:cluster/NAME) or eksctl's
// NAME.REGION.eksctl.io, both of which give the region too, or a plain name.
func eksClusterName(cluster string) (name, region string) {
	if rest, ok := strings.CutPrefix(cluster, "arn:"); ok {
		parts := strings.SplitN(rest, ":", 5) // partition, service, region, account, resource
		if len(parts) == 5 && parts[1] == "eks" {
			if n, ok := strings.CutPrefix(parts[4], "cluster/"); ok {
				return n, parts[2]
			}
		}
	}
	if rest, ok := strings.CutSuffix(cluster, ".eksctl.io"); ok {
		if dot := strings.LastIndexByte(rest, '.'); dot > 0 {
			return rest[:dot], rest[dot+1:]
		}
	}
	return cluster, ""
}

// eksCluster is the EKS cluster of the --cluster flag or, without it, of the kubeconfig's
// current context when its cluster is named the EKS way (an ARN, or eksctl's name). Reading the
// kubeconfig reads no AWS credentials.
func (g *globalOptions) eksCluster() (name, region string) {
	if g.kube.ClusterName != nil && *g.kube.ClusterName != "" {
		return eksClusterName(*g.kube.ClusterName)
	}
	raw, err := g.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", ""
	}
	ctxName := raw.CurrentContext
	if g.kube.Context != nil && *g.kube.Context != "" {
		ctxName = *g.kube.Context
	}
	c, ok := raw.Contexts[ctxName]
	if !ok {
		return "", ""
	}
	name, region = eksClusterName(c.Cluster)
	if region == "" {
		return "", "" // a kubeconfig name that is not recognisably EKS's is no EKS cluster name
	}
	return name, region
}
