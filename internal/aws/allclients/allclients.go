// Package allclients builds the client of every AWS service the CLI calls (Load, NewClients,
// Clients) and holds the interfaces of the services only the CLI calls: CloudWatch Logs
// (LogsAPI, for audit --cloudwatch) and EKS (EKSAPI for the cluster's logging configuration,
// NodegroupsAPI for its managed node groups).
//
// They live apart from internal/aws because the controller links internal/aws through doctor
// and its check loop: a package that names an SDK service's types links that service's client,
// its serializers and its schema tables. Here, only the CLI links CloudWatch Logs and EKS;
// doctor reads the managed node groups through internal/aws's NodegroupTemplatesAPI, which
// Nodegroups adapts the EKS client to.
package allclients

import (
	"context"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

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
	EC2  nkaws.EC2API
	Logs LogsAPI
	EKS  EKSAPI
	// CloudWatch reads metrics (internal/aws's metrics.go).
	CloudWatch nkaws.CloudWatchAPI
	// LaunchTemplates (EC2), Nodegroups (EKS) and AutoScaling are what doctor --aws reads to
	// find the launch template version each node was launched from.
	LaunchTemplates nkaws.LaunchTemplatesAPI
	Nodegroups      NodegroupsAPI
	AutoScaling     nkaws.AutoScalingAPI
	// Region the clients talk to, for messages.
	Region string
	// Throttles counts the calls AWS throttled (each retried by the SDK); nil for fakes.
	Throttles *nkaws.ThrottleCounter
}

// Load builds the clients from the SDK's default configuration chain with the standard
// retryer (nkaws.LoadConfig). It is the only function of the CLI that reads AWS credentials.
func Load(ctx context.Context, o nkaws.LoadOptions) (*Clients, error) {
	cfg, err := nkaws.LoadConfig(ctx, o)
	if err != nil {
		return nil, err
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
	tc := nkaws.CountThrottles(&cfg)
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
	// Each client as the methods nodekeeper calls (internal/aws's methods.go and below), never
	// as itself.
	ec2Client, eksClient := nkaws.NewEC2Methods(ec2.NewFromConfig(cfg, ec2Opts...)), newEKSMethods(eks.NewFromConfig(cfg, eksOpts...))
	return &Clients{
		EC2:             ec2Client,
		Logs:            newLogsMethods(cloudwatchlogs.NewFromConfig(cfg, logsOpts...)),
		EKS:             eksClient,
		LaunchTemplates: ec2Client,
		Nodegroups:      eksClient,
		AutoScaling:     nkaws.AutoScalingMethod(autoscaling.NewFromConfig(cfg, asgOpts...).DescribeAutoScalingGroups),
		CloudWatch:      nkaws.CloudWatchMethod(cloudwatch.NewFromConfig(cfg, cwOpts...).GetMetricData),
		Region:          cfg.Region,
		Throttles:       tc,
	}
}

// FilterLogEvents calls page for every page of events matching in, in the order CloudWatch
// returns them; it stops at the first error of page.
func FilterLogEvents(ctx context.Context, api LogsAPI, in *cloudwatchlogs.FilterLogEventsInput, page func([]logtypes.FilteredLogEvent) error) error {
	p := cloudwatchlogs.NewFilterLogEventsPaginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nkaws.Explain(nkaws.PermFilterLogEvents, err)
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
		return nil, nkaws.Explain(nkaws.PermDescribeCluster, err)
	}
	return out.Cluster, nil
}
