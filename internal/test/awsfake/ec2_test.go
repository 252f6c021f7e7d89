package awsfake

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func testCloud() *Cloud {
	tag := func(k, v string) []ec2types.Tag { return []ec2types.Tag{{Key: aws.String(k), Value: aws.String(v)}} }
	return &Cloud{
		Instances: []ec2types.Instance{
			{InstanceId: aws.String("i-1"), InstanceType: "m5.large", State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}, Tags: tag("team", "a")},
			{InstanceId: aws.String("i-2"), InstanceType: "m5.xlarge", State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameStopped}, Tags: tag("team", "b")},
			{InstanceId: aws.String("i-3"), InstanceType: "c5.large", Tags: tag("team", "a")},
		},
		Subnets: []ec2types.Subnet{
			{SubnetId: aws.String("subnet-1"), VpcId: aws.String("vpc-1")},
			{SubnetId: aws.String("subnet-2"), VpcId: aws.String("vpc-2")},
		},
		PageSize: 2,
	}
}

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// The Describe calls select by ID and filters and page the way EC2 does, and fail as EC2 does.
func TestDescribeSelectsAndPages(t *testing.T) {
	ctx := context.Background()
	instances := func(in *ec2.DescribeInstancesInput) ([]string, string, error) {
		c := testCloud()
		return allPages(func(token *string) (*ec2.DescribeInstancesOutput, error) {
			in.NextToken = token
			return c.DescribeInstances(ctx, in)
		}, func(out *ec2.DescribeInstancesOutput) ([]string, *string) {
			var ids []string
			for _, r := range out.Reservations {
				ids = append(ids, *r.Instances[0].InstanceId)
			}
			return ids, out.NextToken
		})
	}
	subnets := func(in *ec2.DescribeSubnetsInput) ([]string, string, error) {
		out, err := testCloud().DescribeSubnets(ctx, in)
		if err != nil {
			return nil, apiCode(err), err
		}
		var ids []string
		for _, s := range out.Subnets {
			ids = append(ids, *s.SubnetId)
		}
		return ids, "", nil
	}
	runSelectCases(t, []selectCase{
		{"every instance over two pages", func() ([]string, string, error) { return instances(&ec2.DescribeInstancesInput{}) }, []string{"i-1", "i-2", "i-3"}, ""},
		{"instances by ID", func() ([]string, string, error) {
			return instances(&ec2.DescribeInstancesInput{InstanceIds: []string{"i-3", "i-1"}})
		}, []string{"i-1", "i-3"}, ""},
		{"an unknown instance ID selects nothing", func() ([]string, string, error) {
			return instances(&ec2.DescribeInstancesInput{InstanceIds: []string{"i-9"}})
		}, nil, ""},
		{"state and tag filters are ANDed", func() ([]string, string, error) {
			return instances(&ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "running", "stopped"), filter("tag:team", "a")}})
		}, []string{"i-1"}, ""},
		{"wildcards and tag-key", func() ([]string, string, error) {
			return instances(&ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-type", "m5.*"), filter("tag-key", "team")}})
		}, []string{"i-1", "i-2"}, ""},
		{"an unsupported filter fails", func() ([]string, string, error) {
			return instances(&ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("vpc-id", "vpc-1")}})
		}, nil, "InvalidParameterValue"},
		{"subnets by VPC", func() ([]string, string, error) {
			return subnets(&ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("vpc-id", "vpc-2")}})
		}, []string{"subnet-2"}, ""},
		{"an unknown subnet ID fails the call", func() ([]string, string, error) {
			return subnets(&ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-1", "subnet-9"}})
		}, nil, "InvalidSubnetID.NotFound"},
	})
}

// selectCase is one call of a fake's read: the IDs or names it returns, or its error code.
type selectCase struct {
	name     string
	call     func() ([]string, string, error)
	want     []string
	wantCode string
}

// allPages reads every page of a paginated call, or its error code: page asks for the page of a
// token (nil: the first), names gives the names on a page and its NextToken.
func allPages[Out any](page func(token *string) (*Out, error), names func(*Out) ([]string, *string)) ([]string, string, error) {
	var all []string
	var token *string
	for {
		out, err := page(token)
		if err != nil {
			return nil, apiCode(err), err
		}
		got, next := names(out)
		all = append(all, got...)
		if token = next; token == nil {
			return all, "", nil
		}
	}
}

func runSelectCases(t *testing.T, cases []selectCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, code, err := tt.call()
			if code != tt.wantCode {
				t.Fatalf("error code %q (%v), want %q", code, err, tt.wantCode)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// A denied Describe call is counted and fails before anything is selected.
func TestDescribeDenied(t *testing.T) {
	c := testCloud()
	c.Deny = map[string]bool{nkaws.PermDescribeSubnets: true}
	_, err := c.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-9"}})
	if code := apiCode(err); code != "UnauthorizedOperation" {
		t.Fatalf("error code %q (%v), want UnauthorizedOperation", code, err)
	}
}

// TestDescribeInstancesIDsWithMaxResults: EC2 refuses MaxResults beside InstanceIds (EC2 API
// Reference, DescribeInstances: "You cannot specify this parameter and the instance IDs
// parameter in the same request"), as moto does; the fake used to answer it.
func TestDescribeInstancesIDsWithMaxResults(t *testing.T) {
	c := testCloud()
	_, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-1"}, MaxResults: aws.Int32(5)})
	if code := apiCode(err); code != "InvalidParameterCombination" {
		t.Fatalf("error code %q (%v), want InvalidParameterCombination", code, err)
	}
	// Either alone is answered.
	if _, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-1"}}); err != nil {
		t.Error(err)
	}
	if _, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)}); err != nil {
		t.Error(err)
	}
}
