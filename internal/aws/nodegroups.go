package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// NodegroupsAPI is the part of EKS that reads a cluster's managed node groups. *eks.Client
// satisfies it.
type NodegroupsAPI interface {
	ListNodegroups(context.Context, *eks.ListNodegroupsInput, ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error)
	DescribeNodegroup(context.Context, *eks.DescribeNodegroupInput, ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error)
}

// ListNodegroups returns the names of a cluster's managed node groups, from every page.
func ListNodegroups(ctx context.Context, api NodegroupsAPI, cluster string) ([]string, error) {
	p := eks.NewListNodegroupsPaginator(api, &eks.ListNodegroupsInput{ClusterName: &cluster})
	return allPages(ctx, PermListNodegroups, p.HasMorePages, p.NextPage, func(page *eks.ListNodegroupsOutput) []string {
		return page.Nodegroups
	})
}

// DescribeNodegroup returns one managed node group, with the launch template it uses when it
// was created with one.
func DescribeNodegroup(ctx context.Context, api NodegroupsAPI, cluster, name string) (*ekstypes.Nodegroup, error) {
	out, err := api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: &cluster, NodegroupName: &name})
	if err != nil {
		return nil, Explain(PermDescribeNodegroup, err)
	}
	return out.Nodegroup, nil
}
