package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// AutoScalingAPI is the part of EC2 Auto Scaling that reads groups (the launch template of a
// self-managed node group). *autoscaling.Client satisfies it.
type AutoScalingAPI interface {
	DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
}

var noInstances = false

// DescribeAutoScalingGroups returns the groups named (50 a call, Auto Scaling's default limit),
// from every page, without their instance lists (the Nodes' instances are read from EC2).
func DescribeAutoScalingGroups(ctx context.Context, api AutoScalingAPI, names []string) ([]asgtypes.AutoScalingGroup, error) {
	var out []asgtypes.AutoScalingGroup
	for len(names) > 0 {
		batch := names[:min(len(names), 50)]
		names = names[len(batch):]
		p := autoscaling.NewDescribeAutoScalingGroupsPaginator(api, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: batch, IncludeInstances: &noInstances})
		groups, err := AllPages(ctx, PermDescribeAutoScalingGroups, p.HasMorePages, p.NextPage, func(page *autoscaling.DescribeAutoScalingGroupsOutput) []asgtypes.AutoScalingGroup {
			return page.AutoScalingGroups
		})
		out = append(out, groups...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
