package awsfake

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/eks"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ nkaws.NodegroupsAPI = (*Cloud)(nil)

// ListNodegroups implements NodegroupsAPI: the names of the cluster's node groups, paged by
// MaxResults (at most 100, as EKS) and NextToken. An unknown cluster is ResourceNotFoundException.
func (c *Cloud) ListNodegroups(_ context.Context, in *eks.ListNodegroupsInput, _ ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error) {
	return answer(c, nkaws.PermListNodegroups, in, c.listNodegroups)
}

func (c *Cloud) listNodegroups(in *eks.ListNodegroupsInput) (*eks.ListNodegroupsOutput, error) {
	cluster := str(in.ClusterName)
	if _, ok := c.Clusters[cluster]; !ok {
		return nil, apiError("ResourceNotFoundException", "No cluster found for name: %s.", cluster)
	}
	if err := checkPageSize(in.MaxResults, 100, "InvalidParameterException", "maxResults"); err != nil {
		return nil, err
	}
	var names []string
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == cluster {
			names = append(names, str(ng.NodegroupName))
		}
	}
	p, err := pageOf(names, in.NextToken, c.pageSize(defaultPageSize, in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &eks.ListNodegroupsOutput{Nodegroups: p.items, NextToken: p.next}, nil
}

// DescribeNodegroup implements NodegroupsAPI.
func (c *Cloud) DescribeNodegroup(_ context.Context, in *eks.DescribeNodegroupInput, _ ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error) {
	return answer(c, nkaws.PermDescribeNodegroup, in, c.describeNodegroup)
}

func (c *Cloud) describeNodegroup(in *eks.DescribeNodegroupInput) (*eks.DescribeNodegroupOutput, error) {
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == str(in.ClusterName) && str(ng.NodegroupName) == str(in.NodegroupName) {
			return &eks.DescribeNodegroupOutput{Nodegroup: &ng}, nil
		}
	}
	return nil, apiError("ResourceNotFoundException", "No node group found for name: %s.", str(in.NodegroupName))
}
