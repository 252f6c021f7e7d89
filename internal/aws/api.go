package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// EC2API is the part of EC2 nodekeeper reads. *ec2.Client satisfies it.
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeVolumes(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
}

// NodegroupTemplatesAPI is what doctor reads of a cluster's EKS managed node groups: their names
// and the launch template each was created with. It takes none of the EKS SDK's types, so that
// doctor, and with it the controller's check loop, links no EKS client; allclients.Nodegroups
// adapts the EKS client (allclients.NodegroupsAPI) to it. Errors are explained as Explain does.
type NodegroupTemplatesAPI interface {
	// NodegroupNames lists the names of the cluster's managed node groups, from every page.
	NodegroupNames(ctx context.Context, cluster string) ([]string, error)
	// NodegroupLaunchTemplate is the id and version of the launch template the group was
	// created with; ok is false when it was created without one.
	NodegroupLaunchTemplate(ctx context.Context, cluster, name string) (id, version string, ok bool, err error)
}
