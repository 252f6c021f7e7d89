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
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(nkaws.PermListNodegroups); err != nil {
		return nil, err
	}
	cluster := str(in.ClusterName)
	if _, ok := c.Clusters[cluster]; !ok {
		return nil, apiError("ResourceNotFoundException", "No cluster found for name: %s.", cluster)
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 100) {
		return nil, apiError("InvalidParameterException", "maxResults must be between 1 and 100")
	}
	var names []string
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == cluster {
			names = append(names, str(ng.NodegroupName))
		}
	}
	from, to, next, err := page(in.NextToken, len(names), c.pageSize(in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &eks.ListNodegroupsOutput{Nodegroups: names[from:to], NextToken: next}, nil
}

// DescribeNodegroup implements NodegroupsAPI.
func (c *Cloud) DescribeNodegroup(_ context.Context, in *eks.DescribeNodegroupInput, _ ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(nkaws.PermDescribeNodegroup); err != nil {
		return nil, err
	}
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == str(in.ClusterName) && str(ng.NodegroupName) == str(in.NodegroupName) {
			return &eks.DescribeNodegroupOutput{Nodegroup: &ng}, nil
		}
	}
	return nil, apiError("ResourceNotFoundException", "No node group found for name: %s.", str(in.NodegroupName))
}
