package aws

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// LoadOptions choose the credentials and region; empty fields leave the choice to the SDK's
// default chain (environment, shared config and credentials files, SSO, web identity, the
// instance or pod role).
type LoadOptions struct {
	Profile string // --profile: a profile of the shared config files
	Region  string // --region
}

// Load builds the clients from the SDK's default configuration chain with the standard
// retryer. It is the only function of the CLI that reads AWS credentials (the controller's
// EC2 loop builds its EC2 client alone with ec2loop.LoadEC2, so that its image links no other
// AWS service).
func Load(ctx context.Context, o LoadOptions) (*Clients, error) {
	var opts []func(*config.LoadOptions) error
	if o.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.Profile))
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: pass --region, or set AWS_REGION or a region in the profile")
	}
	return NewClients(cfg, ""), nil
}

// NewClients builds the SDK clients from cfg with the standard retryer, counting throttled
// calls. endpoint, when set, replaces every service's endpoint (tests: a local server); when
// empty, each client keeps the endpoint the SDK resolved itself: AWS_ENDPOINT_URL and the
// service-specific AWS_ENDPOINT_URL_<SERVICE>, endpoint_url in the shared config, or else the
// public endpoint of the region. (Setting BaseEndpoint to nil in an option function would undo
// that resolution, which runs before the option functions.)
func NewClients(cfg awssdk.Config, endpoint string) *Clients {
	tc := &ThrottleCounter{}
	cfg.Retryer = func() awssdk.Retryer {
		return &countingRetryer{RetryerV2: retry.NewStandard(), counter: tc}
	}
	var (
		ec2Opts  []func(*ec2.Options)
		logsOpts []func(*cloudwatchlogs.Options)
		eksOpts  []func(*eks.Options)
		cwOpts   []func(*cloudwatch.Options)
		asgOpts  []func(*autoscaling.Options)
	)
	if endpoint != "" {
		ec2Opts = append(ec2Opts, func(o *ec2.Options) { o.BaseEndpoint = awssdk.String(endpoint) })
		logsOpts = append(logsOpts, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = awssdk.String(endpoint) })
		eksOpts = append(eksOpts, func(o *eks.Options) { o.BaseEndpoint = awssdk.String(endpoint) })
		cwOpts = append(cwOpts, func(o *cloudwatch.Options) { o.BaseEndpoint = awssdk.String(endpoint) })
		asgOpts = append(asgOpts, func(o *autoscaling.Options) { o.BaseEndpoint = awssdk.String(endpoint) })
	}
	// Each client as the methods nodekeeper calls (methods.go), never as itself.
	ec2Client, eksClient := newEC2Methods(ec2.NewFromConfig(cfg, ec2Opts...)), newEKSMethods(eks.NewFromConfig(cfg, eksOpts...))
	return &Clients{
		EC2:             ec2Client,
		Logs:            newLogsMethods(cloudwatchlogs.NewFromConfig(cfg, logsOpts...)),
		EKS:             eksClient,
		LaunchTemplates: ec2Client,
		Nodegroups:      eksClient,
		AutoScaling:     autoScalingMethod(autoscaling.NewFromConfig(cfg, asgOpts...).DescribeAutoScalingGroups),
		CloudWatch:      cloudWatchMethod(cloudwatch.NewFromConfig(cfg, cwOpts...).GetMetricData),
		Region:          cfg.Region,
		Throttles:       tc,
	}
}

// ThrottleCounter counts the calls AWS throttled and the SDK retried, so that a command can
// say it was slowed down instead of hiding it.
type ThrottleCounter struct{ n atomic.Int64 }

// Count is the number of throttled attempts so far.
func (t *ThrottleCounter) Count() int64 {
	if t == nil {
		return 0
	}
	return t.n.Load()
}

// countingRetryer is the SDK's standard retryer, counting the throttling errors it retries.
type countingRetryer struct {
	awssdk.RetryerV2
	counter *ThrottleCounter
}

var throttleCheck = retry.IsErrorThrottles(retry.DefaultThrottles)

func (r *countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if throttleCheck.IsErrorThrottle(err) == awssdk.TrueTernary {
		r.counter.n.Add(1)
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}
