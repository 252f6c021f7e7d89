package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// The SDK's clients reach the narrow interfaces as method values, never as themselves: a
// *ec2.Client stored in an interface value keeps every one of its 800-odd exported methods
// (RunInstances, TerminateInstances, ...) in the binary, because the CLI links text/template
// and JSONPath (-o go-template, jsonpath), whose reflective method lookup makes the linker keep
// all exported methods of every type that ever sits in an interface. Method values put only the
// methods nodekeeper calls in the binary; internal/test/deploytest's size and symbol tests hold it.

// ec2Methods is the EC2 client through EC2API and LaunchTemplatesAPI.
type ec2Methods struct {
	describeInstances              func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	describeSubnets                func(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	describeInstanceTypes          func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	describeVolumes                func(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
	describeLaunchTemplateVersions func(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

func newEC2Methods(c *ec2.Client) *ec2Methods {
	return &ec2Methods{c.DescribeInstances, c.DescribeSubnets, c.DescribeInstanceTypes, c.DescribeVolumes, c.DescribeLaunchTemplateVersions}
}

func (m *ec2Methods) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return m.describeInstances(ctx, in, opts...)
}

func (m *ec2Methods) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return m.describeSubnets(ctx, in, opts...)
}

func (m *ec2Methods) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return m.describeInstanceTypes(ctx, in, opts...)
}

func (m *ec2Methods) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, opts ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	return m.describeVolumes(ctx, in, opts...)
}

func (m *ec2Methods) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return m.describeLaunchTemplateVersions(ctx, in, opts...)
}

// logsMethods is the CloudWatch Logs client through LogsAPI.
type logsMethods struct {
	startQuery      func(context.Context, *cloudwatchlogs.StartQueryInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error)
	getQueryResults func(context.Context, *cloudwatchlogs.GetQueryResultsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error)
	stopQuery       func(context.Context, *cloudwatchlogs.StopQueryInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StopQueryOutput, error)
	filterLogEvents func(context.Context, *cloudwatchlogs.FilterLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

func newLogsMethods(c *cloudwatchlogs.Client) *logsMethods {
	return &logsMethods{c.StartQuery, c.GetQueryResults, c.StopQuery, c.FilterLogEvents}
}

func (m *logsMethods) StartQuery(ctx context.Context, in *cloudwatchlogs.StartQueryInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error) {
	return m.startQuery(ctx, in, opts...)
}

func (m *logsMethods) GetQueryResults(ctx context.Context, in *cloudwatchlogs.GetQueryResultsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error) {
	return m.getQueryResults(ctx, in, opts...)
}

func (m *logsMethods) StopQuery(ctx context.Context, in *cloudwatchlogs.StopQueryInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StopQueryOutput, error) {
	return m.stopQuery(ctx, in, opts...)
}

func (m *logsMethods) FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	return m.filterLogEvents(ctx, in, opts...)
}

// eksMethods is the EKS client through EKSAPI and NodegroupsAPI.
type eksMethods struct {
	describeCluster   func(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
	listNodegroups    func(context.Context, *eks.ListNodegroupsInput, ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error)
	describeNodegroup func(context.Context, *eks.DescribeNodegroupInput, ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error)
}

func newEKSMethods(c *eks.Client) *eksMethods {
	return &eksMethods{c.DescribeCluster, c.ListNodegroups, c.DescribeNodegroup}
}

func (m *eksMethods) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return m.describeCluster(ctx, in, opts...)
}

func (m *eksMethods) ListNodegroups(ctx context.Context, in *eks.ListNodegroupsInput, opts ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error) {
	return m.listNodegroups(ctx, in, opts...)
}

func (m *eksMethods) DescribeNodegroup(ctx context.Context, in *eks.DescribeNodegroupInput, opts ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error) {
	return m.describeNodegroup(ctx, in, opts...)
}

// autoScalingMethod is the Auto Scaling client through AutoScalingAPI.
type autoScalingMethod func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)

func (f autoScalingMethod) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return f(ctx, in, opts...)
}

// cloudWatchMethod is the CloudWatch client through CloudWatchAPI.
type cloudWatchMethod func(context.Context, *cloudwatch.GetMetricDataInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)

func (f cloudWatchMethod) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	return f(ctx, in, opts...)
}
