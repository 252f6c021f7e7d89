package aws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
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
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
)

// LoadOptions choose the credentials and region; empty fields leave the choice to the SDK's
// default chain (environment, shared config and credentials files, SSO, web identity, the
// instance or pod role).
type LoadOptions struct {
	Profile string // --profile: a profile of the shared config files
	Region  string // --region
	// Log receives the SDK's own log messages; nil is the SDK's standard logger on stderr.
	Log logging.Logger
	// Timeout is the most every AWS call of the clients may take in all, from Load on
	// (--aws-timeout): past it each call, retries included, fails at once. 0: no deadline.
	Timeout time.Duration
}

// Load builds the clients from the SDK's default configuration chain with the standard
// retryer. It is the only function of the CLI that reads AWS credentials (the controller's
// EC2 loop builds its EC2 client alone with ec2loop.LoadEC2, so that its image links no other
// AWS service).
func Load(ctx context.Context, o LoadOptions) (*Clients, error) {
	opts := []func(*config.LoadOptions) error{config.WithLogger(quietIMDSLogger(o.Log))}
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
	// Credentials are asked for once here, so that a machine without any gets one line that
	// says what to set, not the SDK's chain of every provider it tried at the first call.
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &NoCredentialsError{Profile: o.Profile, Err: err}
	}
	if o.Timeout > 0 {
		cfg.APIOptions = append(cfg.APIOptions, Deadline(time.Now().Add(o.Timeout), o.Timeout))
	}
	return NewClients(cfg, ""), nil
}

// NoCredentialsError is the SDK's default chain finding no credentials. Its text is one line
// naming the sources to set; the chain's own error (every provider tried) stays reachable with
// errors.Unwrap and is what Detail returns.
type NoCredentialsError struct {
	Profile string
	Err     error
}

func (e *NoCredentialsError) Error() string {
	if e.Profile != "" {
		return fmt.Sprintf("no AWS credentials for profile %q: set them in the shared credentials or config file "+
			"(aws configure --profile %s, or aws sso login --profile %s)", e.Profile, e.Profile, e.Profile)
	}
	return "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (or --profile) " +
		"with the shared credentials or config file (aws configure, aws sso login), or run where an instance or pod role " +
		"(IRSA, EKS Pod Identity) provides them"
}

// Headline is what cli.Execute prints: the one line, not the SDK chain wrapped around it.
func (e *NoCredentialsError) Headline() string { return e.Error() }

// Detail is the SDK's own error: every provider of the chain and why it failed.
func (e *NoCredentialsError) Detail() string { return e.Err.Error() }

func (e *NoCredentialsError) Unwrap() error { return e.Err }

// quietIMDSLogger is the SDK's logger without its "falling back to IMDSv1" warning: off EC2, an
// address answering 403/404 at the metadata endpoint makes the SDK print it on every run, and
// the missing credentials are then said in NoCredentialsError's one line. Every other message
// goes to next (nil: the SDK's standard logger on stderr).
func quietIMDSLogger(next logging.Logger) logging.Logger {
	if next == nil {
		next = logging.NewStandardLogger(os.Stderr)
	}
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if strings.HasPrefix(format, "falling back to IMDSv1") {
			return
		}
		next.Logf(c, format, v...)
	})
}

// DeadlineError is the cause of a call cut short by Deadline.
type DeadlineError struct{ Timeout time.Duration }

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("the AWS calls of this run passed their deadline (%s in all)", e.Timeout)
}

// Deadline is an SDK option (aws.Config.APIOptions) that ends every call at deadline, retries and
// waits between pages included: one deadline for all the calls of a run, so that no listing,
// hang or throttling of AWS holds a command past it. timeout is what the error says the
// deadline was.
func Deadline(deadline time.Time, timeout time.Duration) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("nodekeeperDeadline",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				cause := &DeadlineError{Timeout: timeout}
				ctx, cancel := context.WithDeadlineCause(ctx, deadline, cause)
				defer cancel()
				out, md, err := next.HandleInitialize(ctx, in)
				if err != nil && errors.Is(context.Cause(ctx), cause) {
					err = fmt.Errorf("%w: %w", cause, err)
				}
				return out, md, err
			}), middleware.Before)
	}
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
