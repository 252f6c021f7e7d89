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

// LoadConfig reads the SDK's default configuration chain (credentials asked for once, region
// required) and, with o.Timeout, adds Deadline to every call. allclients.Load builds the CLI's
// clients from it; the controller's EC2 loop builds its EC2 client alone with ec2loop.LoadEC2,
// so that its image links no other AWS service.
func LoadConfig(ctx context.Context, o LoadOptions) (awssdk.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithLogger(quietIMDSLogger(o.Log))}
	if o.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.Profile))
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return cfg, fmt.Errorf("no AWS region: pass --region, or set AWS_REGION or a region in the profile")
	}
	// Credentials are asked for once here, so that a machine without any gets one line that
	// says what to set, not the SDK's chain of every provider it tried at the first call.
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return cfg, ctx.Err()
		}
		return cfg, &NoCredentialsError{Profile: o.Profile, Err: err}
	}
	if o.Timeout > 0 {
		cfg.APIOptions = append(cfg.APIOptions, Deadline(time.Now().Add(o.Timeout), o.Timeout))
	}
	return cfg, nil
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

// CountThrottles gives cfg the SDK's standard retryer, counting the throttled calls it
// retries in the counter it returns.
func CountThrottles(cfg *awssdk.Config) *ThrottleCounter {
	tc := &ThrottleCounter{}
	cfg.Retryer = func() awssdk.Retryer {
		return &countingRetryer{RetryerV2: retry.NewStandard(), counter: tc}
	}
	return tc
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
