package awsfake

import (
	"context"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"

	"github.com/aws/aws-sdk-go-v2/service/eks"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ allclients.EKSAPI = (*Cloud)(nil)

// DescribeCluster implements EKSAPI.
func (c *Cloud) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return answer(c, nkaws.PermDescribeCluster, in, c.describeCluster)
}

func (c *Cloud) describeCluster(in *eks.DescribeClusterInput) (*eks.DescribeClusterOutput, error) {
	cl, ok := c.Clusters[str(in.Name)]
	if !ok {
		return nil, apiError("ResourceNotFoundException", "No cluster found for name: %s.", str(in.Name))
	}
	return &eks.DescribeClusterOutput{Cluster: &cl}, nil
}
