package ec2loop

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/nodekeeper/nodekeeper/internal/instances"
)

// EC2 is the controller's EC2 client as the method values of the four Describe calls it makes:
// DescribeInstances for the EC2 loop (instances.API), and all four for the check loop's EC2
// checks and plan's subnet limit (internal/aws's EC2API). Method values, not the client: the
// client in an interface value would keep all of its methods in a binary that also links
// text/template (the CLI's controller command).
type EC2 struct {
	Instances     instances.DescribeInstancesFunc
	Subnets       func(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	InstanceTypes func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	Volumes       func(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
}

// DescribeInstances calls EC2's DescribeInstances.
func (c EC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return c.Instances(ctx, in, opts...)
}

// DescribeSubnets calls EC2's DescribeSubnets.
func (c EC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return c.Subnets(ctx, in, opts...)
}

// DescribeInstanceTypes calls EC2's DescribeInstanceTypes.
func (c EC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return c.InstanceTypes(ctx, in, opts...)
}

// DescribeVolumes calls EC2's DescribeVolumes.
func (c EC2) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, opts ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	return c.Volumes(ctx, in, opts...)
}

// LoadEC2 builds the controller's EC2 client from the SDK's default chain (in a cluster: IRSA's
// web identity or EKS Pod Identity; AWS_ENDPOINT_URL is honoured) with the SDK's standard
// retryer. It is the controller's counterpart of internal/aws's Load, which the controller's
// binary does not link: it builds an EC2 client alone, so the image carries neither CloudWatch
// Logs nor EKS.
func LoadEC2(ctx context.Context, region string) (EC2, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return EC2{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return EC2{}, fmt.Errorf("no AWS region: pass --region, or set AWS_REGION (IRSA and Pod Identity set it)")
	}
	c := ec2.NewFromConfig(cfg)
	return EC2{Instances: c.DescribeInstances, Subnets: c.DescribeSubnets, InstanceTypes: c.DescribeInstanceTypes, Volumes: c.DescribeVolumes}, nil
}
