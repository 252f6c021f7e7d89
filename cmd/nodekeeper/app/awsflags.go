package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"strings"
	"time"

	"github.com/spf13/pflag"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// awsFlags are the AWS connection flags of the commands that can talk to AWS, and on the
// commands that act on one cluster's AWS side, --eks-cluster.
type awsFlags struct {
	g               *globalOptions
	region, profile string
	// eksCluster is --eks-cluster (audit also takes the deprecated --cluster for it).
	eksCluster string
	// timeout is --aws-timeout, on the commands whose --aws adds AWS calls to a cluster run.
	timeout time.Duration
}

// DefaultAWSTimeout is --aws-timeout's default: far above what the AWS calls of doctor, plan or
// leases take (seconds, a minute with CloudWatch metrics of many volumes), well under "for ever".
const DefaultAWSTimeout = 5 * time.Minute

// AddTimeoutFlag adds --aws-timeout.
func (a *awsFlags) AddTimeoutFlag(f *pflag.FlagSet) {
	f.DurationVar(&a.timeout, "aws-timeout", DefaultAWSTimeout, "with --aws: the most all the AWS calls of the run may take together, retries and pages included; past it they fail and the run reports without them (0: no limit)")
}

// validateTimeout refuses a negative --aws-timeout.
func (a *awsFlags) validateTimeout() error {
	if a.timeout < 0 {
		return fmt.Errorf("--aws-timeout must not be negative (got %s; 0 means no limit)", a.timeout)
	}
	return nil
}

func (a *awsFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&a.region, "region", "", "AWS region (default: the AWS configuration's, or the region of the EKS cluster's ARN or eksctl name)")
	f.StringVar(&a.profile, "profile", "", "AWS profile from the shared config and credentials files (default: the SDK's default chain)")
}

// AddClusterFlag adds --eks-cluster; when says what the flag is used with ("with --aws").
func (a *awsFlags) AddClusterFlag(f *pflag.FlagSet, when string) {
	f.StringVar(&a.eksCluster, "eks-cluster", "", when+": the EKS cluster, by name or ARN (an ARN gives the region too); default: the kubeconfig context's cluster when it is named the EKS way (an ARN, as aws eks update-kubeconfig names it, or NAME.REGION.eksctl.io)")
}

// clients loads the AWS clients, taking the region from the EKS cluster's ARN or eksctl name
// when none was given.
func (a *awsFlags) clients(ctx context.Context) (*allclients.Clients, error) {
	o := nkaws.LoadOptions{Profile: a.profile, Region: a.region, Timeout: a.timeout}
	if o.Region == "" {
		_, o.Region, _ = a.cluster()
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

// cluster is the EKS cluster: --eks-cluster, or else the cluster of the kubeconfig context in
// use (kubectl's --context, or the current context; kubectl's --cluster picks another entry of
// the kubeconfig) when that entry is named the EKS way. region is "" when the name does not
// give it. The error says to pass --eks-cluster. Reading the kubeconfig reads no AWS
// credentials.
func (a *awsFlags) cluster() (name, region string, err error) {
	if a.eksCluster != "" {
		name, region = eksClusterName(a.eksCluster)
		return name, region, nil
	}
	entry, err := a.g.kubeconfigCluster()
	if err != nil {
		return "", "", fmt.Errorf("no EKS cluster: pass --eks-cluster NAME|ARN (%w)", err)
	}
	name, region = eksClusterName(entry)
	if region == "" { // a kubeconfig name that is not recognisably EKS's is no EKS cluster name
		return "", "", fmt.Errorf("no EKS cluster: the kubeconfig cluster %q is not named the EKS way (an ARN or NAME.REGION.eksctl.io): pass --eks-cluster NAME|ARN", entry)
	}
	return name, region, nil
}

// kubeconfigCluster is the name of the kubeconfig cluster entry the kubectl connection flags
// select: --cluster, or the cluster of the context in use (--context, or the current context).
func (g *globalOptions) kubeconfigCluster() (string, error) {
	if cluster := g.kube.Cluster(); cluster != "" {
		return cluster, nil
	}
	raw, err := g.kube.RawConfig()
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	ctxName := raw.CurrentContext
	if ctx := g.kube.Context(); ctx != "" {
		ctxName = ctx
	}
	if ctxName == "" {
		return "", errors.New("the kubeconfig has no current context")
	}
	c, ok := raw.Contexts[ctxName]
	if !ok {
		return "", fmt.Errorf("the kubeconfig has no context %q", ctxName)
	}
	if c.Cluster == "" {
		return "", fmt.Errorf("the kubeconfig context %q names no cluster", ctxName)
	}
	return c.Cluster, nil
}
