package awsfake

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ nkaws.AutoScalingAPI = (*Cloud)(nil)

// DescribeAutoScalingGroups implements AutoScalingAPI: AutoScalingGroupNames (none: every group;
// unknown names are left out, not an error, as in Auto Scaling), IncludeInstances (default
// true), paged by MaxRecords (default 50, at most 100) and NextToken.
func (c *Cloud) DescribeAutoScalingGroups(_ context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return answer(c, nkaws.PermDescribeAutoScalingGroups, in, c.describeAutoScalingGroups)
}

func (c *Cloud) describeAutoScalingGroups(in *autoscaling.DescribeAutoScalingGroupsInput) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	if err := checkPageSize(in.MaxRecords, 100, "ValidationError", "MaxRecords"); err != nil {
		return nil, err
	}
	size := 50
	if in.MaxRecords != nil {
		size = int(*in.MaxRecords)
	}
	if len(in.AutoScalingGroupNames) > size {
		return nil, apiError("ValidationError", "%d names: at most MaxRecords (%d) names may be given", len(in.AutoScalingGroupNames), size)
	}
	var match []asgtypes.AutoScalingGroup
	for _, g := range c.AutoScalingGroups {
		if len(in.AutoScalingGroupNames) > 0 && !slices.Contains(in.AutoScalingGroupNames, str(g.AutoScalingGroupName)) {
			continue
		}
		if in.IncludeInstances != nil && !*in.IncludeInstances {
			g.Instances = nil
		}
		match = append(match, g)
	}
	p, err := pageOf(match, in.NextToken, min(size, c.pageSize(defaultPageSize, nil)))
	if err != nil {
		return nil, err
	}
	return &autoscaling.DescribeAutoScalingGroupsOutput{AutoScalingGroups: p.items, NextToken: p.next}, nil
}
