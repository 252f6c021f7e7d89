package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The SDK's clients reach the narrow interfaces as method values, never as themselves: a
// *ec2.Client stored in an interface value keeps every one of its 800-odd exported methods
// (RunInstances, TerminateInstances, ...) in the binary, because the CLI links text/template
// and JSONPath (-o go-template, jsonpath), whose reflective method lookup makes the linker keep
// all exported methods of every type that ever sits in an interface. Method values put only the
// methods nodekeeper calls in the binary; internal/test/deploytest's size and symbol tests hold it.

// EC2Methods is the EC2 client through EC2API and LaunchTemplatesAPI (NewEC2Methods).
type EC2Methods struct {
	describeInstances              func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	describeSubnets                func(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	describeInstanceTypes          func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	describeVolumes                func(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
	describeLaunchTemplateVersions func(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// NewEC2Methods holds the methods of c that EC2API and LaunchTemplatesAPI call.
func NewEC2Methods(c *ec2.Client) *EC2Methods {
	return &EC2Methods{c.DescribeInstances, c.DescribeSubnets, c.DescribeInstanceTypes, c.DescribeVolumes, c.DescribeLaunchTemplateVersions}
}

func (m *EC2Methods) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return m.describeInstances(ctx, in, opts...)
}

func (m *EC2Methods) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return m.describeSubnets(ctx, in, opts...)
}

func (m *EC2Methods) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return m.describeInstanceTypes(ctx, in, opts...)
}

func (m *EC2Methods) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, opts ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	return m.describeVolumes(ctx, in, opts...)
}

func (m *EC2Methods) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return m.describeLaunchTemplateVersions(ctx, in, opts...)
}

// AutoScalingMethod is the Auto Scaling client through AutoScalingAPI: its
// DescribeAutoScalingGroups method value.
type AutoScalingMethod func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)

func (f AutoScalingMethod) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return f(ctx, in, opts...)
}

// CloudWatchMethod is the CloudWatch client through CloudWatchAPI: its GetMetricData method
// value.
type CloudWatchMethod func(context.Context, *cloudwatch.GetMetricDataInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)

func (f CloudWatchMethod) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	return f(ctx, in, opts...)
}
