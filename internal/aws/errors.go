package aws

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// The IAM actions of the calls nodekeeper makes, one per API operation. docs/aws.md holds the
// policy that allows exactly these; a test keeps the two in step with the calls awsfake records.
const (
	PermDescribeInstances     = "ec2:DescribeInstances"
	PermDescribeSubnets       = "ec2:DescribeSubnets"
	PermDescribeInstanceTypes = "ec2:DescribeInstanceTypes"
	PermStartQuery            = "logs:StartQuery"
	PermGetQueryResults       = "logs:GetQueryResults"
	PermStopQuery             = "logs:StopQuery"
	PermFilterLogEvents       = "logs:FilterLogEvents"
	PermDescribeCluster       = "eks:DescribeCluster"

	PermDescribeLaunchTemplateVersions = "ec2:DescribeLaunchTemplateVersions"
	PermListNodegroups                 = "eks:ListNodegroups"
	PermDescribeNodegroup              = "eks:DescribeNodegroup"
	PermDescribeAutoScalingGroups      = "autoscaling:DescribeAutoScalingGroups"

	PermDescribeVolumes = "ec2:DescribeVolumes"
	PermGetMetricData   = "cloudwatch:GetMetricData"
)

// deniedCodes are the error codes AWS services answer when IAM does not allow a call: EC2 says
// UnauthorizedOperation, the JSON services AccessDeniedException.
var deniedCodes = map[string]bool{
	"AccessDenied":          true,
	"AccessDeniedException": true,
	"UnauthorizedOperation": true,
	"UnauthorizedAccess":    true,
}

// failedCall is what an explained error carries: the permission of the API operation called
// and the answer AWS gave, which it unwraps to.
type failedCall struct {
	Permission string
	Err        error
}

func (e *failedCall) Unwrap() error { return e.Err }

// AccessDeniedError is an AWS call that IAM did not allow; Permission is the action to add.
type AccessDeniedError struct{ failedCall }

func (e *AccessDeniedError) Error() string {
	return fmt.Sprintf("AWS denied %s: allow it in the IAM policy of the credentials in use (docs/aws.md lists the read-only policy nodekeeper needs): %v", e.Permission, e.Err)
}

// ThrottledError is an AWS call that was still throttled after the SDK's retries.
type ThrottledError struct{ failedCall }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("AWS throttled %s and it was still throttled after the SDK's retries: run again later, narrow the query, or raise the account's API rate limit: %v", e.Permission, e.Err)
}

// Explain turns the error of a call to the API operation allowed by permission into one that
// says what to do: AccessDenied names the missing permission, throttling says it was throttled.
// Other errors are wrapped with the permission's name.
func Explain(permission string, err error) error {
	if err == nil {
		return nil
	}
	var ad *AccessDeniedError
	var th *ThrottledError
	if errors.As(err, &ad) || errors.As(err, &th) {
		return err
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if deniedCodes[api.ErrorCode()] {
			return &AccessDeniedError{failedCall{permission, err}}
		}
		if _, ok := retry.DefaultThrottleErrorCodes[api.ErrorCode()]; ok {
			return &ThrottledError{failedCall{permission, err}}
		}
	}
	return fmt.Errorf("%s: %w", permission, err)
}

// IsAccessDenied reports whether err is an AccessDenied answer (explained or not).
func IsAccessDenied(err error) bool {
	var ad *AccessDeniedError
	if errors.As(err, &ad) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && deniedCodes[api.ErrorCode()]
}
