package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// The helpers below walk every page with the SDK's paginators and explain errors (see Explain).

// DescribeInstances returns the instances matching in, from every page.
func DescribeInstances(ctx context.Context, api EC2API, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	p := ec2.NewDescribeInstancesPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, Explain(PermDescribeInstances, err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// DescribeSubnets returns the subnets matching in, from every page.
func DescribeSubnets(ctx context.Context, api EC2API, in *ec2.DescribeSubnetsInput) ([]ec2types.Subnet, error) {
	var out []ec2types.Subnet
	p := ec2.NewDescribeSubnetsPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, Explain(PermDescribeSubnets, err)
		}
		out = append(out, page.Subnets...)
	}
	return out, nil
}

// DescribeInstanceTypes returns the instance types matching in, from every page.
func DescribeInstanceTypes(ctx context.Context, api EC2API, in *ec2.DescribeInstanceTypesInput) ([]ec2types.InstanceTypeInfo, error) {
	var out []ec2types.InstanceTypeInfo
	p := ec2.NewDescribeInstanceTypesPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, Explain(PermDescribeInstanceTypes, err)
		}
		out = append(out, page.InstanceTypes...)
	}
	return out, nil
}

// FilterLogEvents calls page for every page of events matching in, in the order CloudWatch
// returns them; it stops at the first error of page.
func FilterLogEvents(ctx context.Context, api LogsAPI, in *cloudwatchlogs.FilterLogEventsInput, page func([]logtypes.FilteredLogEvent) error) error {
	p := cloudwatchlogs.NewFilterLogEventsPaginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return Explain(PermFilterLogEvents, err)
		}
		if err := page(out.Events); err != nil {
			return err
		}
	}
	return nil
}

// DescribeCluster returns an EKS cluster's description.
func DescribeCluster(ctx context.Context, api EKSAPI, name string) (*ekstypes.Cluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &name})
	if err != nil {
		return nil, Explain(PermDescribeCluster, err)
	}
	return out.Cluster, nil
}
