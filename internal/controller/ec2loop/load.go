package ec2loop

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/nodekeeper/nodekeeper/internal/instances"
)

// LoadEC2 builds the loop's EC2 client from the SDK's default chain (in a cluster: IRSA's web
// identity or EKS Pod Identity; AWS_ENDPOINT_URL is honoured) with the SDK's standard retryer.
// It is the controller's counterpart of internal/aws's Load, which the controller's binary does
// not link: it builds an EC2 client alone, so the image carries neither CloudWatch Logs nor EKS.
func LoadEC2(ctx context.Context, region string) (instances.API, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: pass --region, or set AWS_REGION (IRSA and Pod Identity set it)")
	}
	// The method value, not the client: the client in an interface value would keep all of
	// its methods in a binary that also links text/template (the CLI's controller command).
	return instances.DescribeInstancesFunc(ec2.NewFromConfig(cfg).DescribeInstances), nil
}
