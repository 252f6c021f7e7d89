package explain

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// The AWS clients are counted here, so that the story says what it cost in AWS calls too
// (each page of a paginated call is one).

type countedEC2 struct {
	nkaws.EC2API
	n *atomic.Int64
}

func (c countedEC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, o ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	c.n.Add(1)
	return c.EC2API.DescribeInstances(ctx, in, o...)
}

func (c countedEC2) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, o ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	c.n.Add(1)
	return c.EC2API.DescribeVolumes(ctx, in, o...)
}

type countedMetrics struct {
	nkaws.CloudWatchAPI
	n *atomic.Int64
}

func (c countedMetrics) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, o ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	c.n.Add(1)
	return c.CloudWatchAPI.GetMetricData(ctx, in, o...)
}

type countedTemplates struct {
	nkaws.LaunchTemplatesAPI
	n *atomic.Int64
}

func (c countedTemplates) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, o ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	c.n.Add(1)
	return c.LaunchTemplatesAPI.DescribeLaunchTemplateVersions(ctx, in, o...)
}

type countedASG struct {
	nkaws.AutoScalingAPI
	n *atomic.Int64
}

func (c countedASG) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	c.n.Add(1)
	return c.AutoScalingAPI.DescribeAutoScalingGroups(ctx, in, o...)
}

// counted wraps the AWS clients of a with one counter, unless a counts its calls itself.
func counted(a *AWSOptions) *AWSOptions {
	if a == nil || a.Calls != nil {
		return a
	}
	n := &atomic.Int64{}
	c := *a
	if c.EC2 != nil {
		c.EC2 = countedEC2{c.EC2, n}
	}
	if c.LaunchTemplates != nil {
		c.LaunchTemplates = countedTemplates{c.LaunchTemplates, n}
	}
	if c.AutoScaling != nil {
		c.AutoScaling = countedASG{c.AutoScaling, n}
	}
	if c.Metrics != nil {
		c.Metrics = countedMetrics{c.Metrics, n}
	}
	c.Calls = n.Load
	return &c
}
