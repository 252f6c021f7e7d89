package allclients

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// The clients reach the interfaces as method values, as in internal/aws's methods.go (which
// says why).

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
