package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// EC2API is the part of EC2 nodekeeper reads. *ec2.Client satisfies it.
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeVolumes(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
}

// LogsAPI is the part of CloudWatch Logs nodekeeper reads: Logs Insights queries, and
// FilterLogEvents where Insights is not allowed. *cloudwatchlogs.Client satisfies it.
type LogsAPI interface {
	StartQuery(context.Context, *cloudwatchlogs.StartQueryInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error)
	GetQueryResults(context.Context, *cloudwatchlogs.GetQueryResultsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error)
	StopQuery(context.Context, *cloudwatchlogs.StopQueryInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StopQueryOutput, error)
	FilterLogEvents(context.Context, *cloudwatchlogs.FilterLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// EKSAPI is the part of EKS nodekeeper reads: the cluster's tags and logging configuration.
// *eks.Client satisfies it.
type EKSAPI interface {
	DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// Clients holds one implementation of each API.
type Clients struct {
	EC2  EC2API
	Logs LogsAPI
	EKS  EKSAPI
	// CloudWatch reads metrics (metrics.go).
	CloudWatch CloudWatchAPI
	// LaunchTemplates (EC2), Nodegroups (EKS) and AutoScaling are what doctor --aws reads to
	// find the launch template version each node was launched from.
	LaunchTemplates LaunchTemplatesAPI
	Nodegroups      NodegroupsAPI
	AutoScaling     AutoScalingAPI
	// Region the clients talk to, for messages.
	Region string
	// Throttles counts the calls AWS throttled (each retried by the SDK); nil for fakes.
	Throttles *ThrottleCounter
}
