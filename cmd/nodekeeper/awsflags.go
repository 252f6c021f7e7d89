package main

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// loadAWSClients is the one place a command gets AWS clients (and so reads AWS credentials).
// Commands call it only behind --aws or --cloudwatch; tests replace it with the in-memory AWS
// and check that the default paths never call it.
var loadAWSClients = func(ctx context.Context, o nkaws.LoadOptions) (*nkaws.Clients, error) {
	return nkaws.Load(ctx, o)
}

// awsFlags are the AWS connection flags of the commands that can talk to AWS.
type awsFlags struct {
	region, profile string
}

func (a *awsFlags) add(f *pflag.FlagSet) {
	f.StringVar(&a.region, "region", "", "AWS region (default: the AWS configuration's, or the region of an EKS cluster ARN given to --cluster)")
	f.StringVar(&a.profile, "profile", "", "AWS profile from the shared config and credentials files (default: the SDK's default chain)")
}

// clients loads the AWS clients, taking the region from an EKS cluster ARN when none was given.
func (a *awsFlags) clients(ctx context.Context) (*nkaws.Clients, error) {
	o := nkaws.LoadOptions{Profile: a.profile, Region: a.region}
	if o.Region == "" {
		_, o.Region = flagEKSCluster()
	}
	return loadAWSClients(ctx, o)
}

// eksClusterName is the EKS cluster named by --cluster: a plain name, or the ARN that
// `aws eks update-kubeconfig` gives kubeconfig clusters (arn:aws:eks:REGION:ACCOUNT:cluster/NAME),
// whose region is returned too.
func eksClusterName(cluster string) (name, region string) {
	if rest, ok := strings.CutPrefix(cluster, "arn:"); ok {
		parts := strings.SplitN(rest, ":", 5) // partition, service, region, account, resource
		if len(parts) == 5 && parts[1] == "eks" {
			if n, ok := strings.CutPrefix(parts[4], "cluster/"); ok {
				return n, parts[2]
			}
		}
	}
	return cluster, ""
}

// flagEKSCluster is the EKS cluster of the --cluster flag (empty when not given).
func flagEKSCluster() (name, region string) {
	if kubeFlags.ClusterName == nil {
		return "", ""
	}
	return eksClusterName(*kubeFlags.ClusterName)
}
