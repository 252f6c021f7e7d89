package awsfake

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

func templateCloud() *Cloud {
	c := New()
	c.PageSize = 2
	for v := int64(1); v <= 3; v++ {
		c.LaunchTemplateVersions = append(c.LaunchTemplateVersions, ec2types.LaunchTemplateVersion{
			LaunchTemplateId: aws.String("lt-0abc"), LaunchTemplateName: aws.String("workers"), VersionNumber: aws.Int64(v),
			DefaultVersion: aws.Bool(v == 2), LaunchTemplateData: &ec2types.ResponseLaunchTemplateData{UserData: UserData("#!/bin/bash\n", v == 3)}})
	}
	c.Clusters["prod"] = ekstypes.Cluster{Name: aws.String("prod")}
	for _, n := range []string{"a", "b", "c"} {
		c.Nodegroups = append(c.Nodegroups, ekstypes.Nodegroup{ClusterName: aws.String("prod"), NodegroupName: aws.String(n)})
	}
	c.Nodegroups = append(c.Nodegroups, ekstypes.Nodegroup{ClusterName: aws.String("staging"), NodegroupName: aws.String("d")})
	c.AutoScalingGroups = []asgtypes.AutoScalingGroup{
		{AutoScalingGroupName: aws.String("asg-1"), Instances: []asgtypes.Instance{{InstanceId: aws.String("i-1")}}},
		{AutoScalingGroupName: aws.String("asg-2")},
	}
	return c
}

// The launch template, node group and Auto Scaling reads select, page and fail as AWS does.
func TestLaunchTemplateNodegroupAutoScalingReads(t *testing.T) {
	ctx := context.Background()
	versions := func(in *ec2.DescribeLaunchTemplateVersionsInput) ([]string, string, error) {
		c := templateCloud()
		return allPages(func(token *string) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
			in.NextToken = token
			return c.DescribeLaunchTemplateVersions(ctx, in)
		}, func(out *ec2.DescribeLaunchTemplateVersionsOutput) ([]string, *string) {
			var got []string
			for _, v := range out.LaunchTemplateVersions {
				got = append(got, strconv.FormatInt(*v.VersionNumber, 10))
			}
			return got, out.NextToken
		})
	}
	nodegroups := func(cluster string) ([]string, string, error) {
		c := templateCloud()
		return allPages(func(token *string) (*eks.ListNodegroupsOutput, error) {
			return c.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: aws.String(cluster), NextToken: token})
		}, func(out *eks.ListNodegroupsOutput) ([]string, *string) { return out.Nodegroups, out.NextToken })
	}
	groups := func(in *autoscaling.DescribeAutoScalingGroupsInput) ([]string, string, error) {
		out, err := templateCloud().DescribeAutoScalingGroups(ctx, in)
		if err != nil {
			return nil, apiCode(err), err
		}
		var got []string
		for _, g := range out.AutoScalingGroups {
			got = append(got, *g.AutoScalingGroupName+":"+strconv.Itoa(len(g.Instances)))
		}
		return got, "", nil
	}
	lt := aws.String("lt-0abc")
	runSelectCases(t, []selectCase{
		{"every version over two pages", func() ([]string, string, error) {
			return versions(&ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lt})
		}, []string{"1", "2", "3"}, ""},
		{"$Latest, $Default and a number, by name", func() ([]string, string, error) {
			return versions(&ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("workers"), Versions: []string{"$Latest", "$Default", "1"}})
		}, []string{"1", "2", "3"}, ""},
		{"an unknown version", func() ([]string, string, error) {
			return versions(&ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lt, Versions: []string{"9"}})
		}, nil, "InvalidLaunchTemplateId.VersionNotFound"},
		{"an unknown template", func() ([]string, string, error) {
			return versions(&ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String("lt-9")})
		}, nil, "InvalidLaunchTemplateId.NotFound"},
		{"ID and name together", func() ([]string, string, error) {
			return versions(&ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lt, LaunchTemplateName: aws.String("workers")})
		}, nil, "InvalidParameterCombination"},
		{"the cluster's node groups over two pages", func() ([]string, string, error) { return nodegroups("prod") }, []string{"a", "b", "c"}, ""},
		{"node groups of an unknown cluster", func() ([]string, string, error) { return nodegroups("nope") }, nil, "ResourceNotFoundException"},
		{"groups by name, unknown names left out", func() ([]string, string, error) {
			return groups(&autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"asg-1", "asg-9"}})
		}, []string{"asg-1:1"}, ""},
		{"groups without their instances", func() ([]string, string, error) {
			return groups(&autoscaling.DescribeAutoScalingGroupsInput{IncludeInstances: aws.Bool(false), MaxRecords: aws.Int32(100)})
		}, []string{"asg-1:0", "asg-2:0"}, ""},
	})
	c := templateCloud()
	if _, err := c.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("prod"), NodegroupName: aws.String("d")}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("another cluster's node group: %v, want ResourceNotFoundException", err)
	}
}

// A managed node group launches from EKS's copy of the user's template ("The Amazon EKS API
// creates this launch template either by copying one you provide", Amazon EKS User Guide,
// https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html): DescribeNodegroup
// names the user's template and version, the instances' tags the copy, which EC2 describes with
// the user's version's data.
func TestManagedNodegroupRunsACopy(t *testing.T) {
	ctx := context.Background()
	c := templateCloud()
	tags := c.AddManagedNodegroup("prod", "custom", "lt-0abc", 3, "lt-0eks")
	out, err := c.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("prod"), NodegroupName: aws.String("custom")})
	if err != nil {
		t.Fatal(err)
	}
	if lt := out.Nodegroup.LaunchTemplate; aws.ToString(lt.Id) != "lt-0abc" || aws.ToString(lt.Version) != "3" {
		t.Errorf("DescribeNodegroup names %s version %s, want the user's lt-0abc version 3", aws.ToString(lt.Id), aws.ToString(lt.Version))
	}
	if tags["aws:ec2launchtemplate:id"] != "lt-0eks" || tags["aws:ec2launchtemplate:version"] != "1" {
		t.Errorf("instance tags %v, want the copy lt-0eks version 1", tags)
	}
	copied, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String("lt-0eks"), Versions: []string{"1"}})
	if err != nil {
		t.Fatal(err)
	}
	user, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String("lt-0abc"), Versions: []string{"3"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(copied.LaunchTemplateVersions[0].LaunchTemplateData.UserData), aws.ToString(user.LaunchTemplateVersions[0].LaunchTemplateData.UserData); got != want {
		t.Errorf("the copy's user data %q, want the user's %q", got, want)
	}
}
