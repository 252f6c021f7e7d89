//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/test/motoserver"
)

// TestDoctorAWSLaunchTemplates: doctor --aws reads the user data of the launch template versions
// the Nodes were launched from, found the ways EC2, Auto Scaling and EKS name them:
//
//   - a launch template with two versions: 1, the default, flushes iptables before it runs the
//     bootstrap script (NK632); 2, the latest, has no user data;
//   - an Auto Scaling group launching $Default: moto launches version 1 and tags its instance
//     aws:ec2launchtemplate:version=1 and aws:autoscaling:groupName, as EC2 and Auto Scaling do;
//   - a managed node group naming the template's $Latest, whose Node's instance was launched
//     from version 2.
//
// (Version 2 has no user data because moto 5.2.1 cannot launch from a version made by
// CreateLaunchTemplateVersion that has some: it keeps that UserData undecoded, and RunInstances
// or Auto Scaling then fail with HTTP 500 on an assertion in LaunchTemplateVersion.user_data.)
//
// The flush is reported once, on version 1 with its one Node; version 2 is clean. Both aliases
// are asked of EC2 (DescribeLaunchTemplateVersions answers $Latest and $Default with the version
// they stand for), and the node group and Auto Scaling group are read over their wire protocols.
func TestDoctorAWSLaunchTemplates(t *testing.T) {
	ctx := context.Background()
	a := newAccount(t)
	a.cluster()
	const flush = "#!/bin/bash\niptables -F\n/etc/eks/bootstrap.sh demo\n"
	lt := a.template("e2e-nodes", flush, "")

	// The Auto Scaling group on $Default, and its instance's Node.
	const group = "e2e-asg-default"
	_, err := a.asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: awssdk.String(group),
		MinSize: awssdk.Int32(1), MaxSize: awssdk.Int32(1), DesiredCapacity: awssdk.Int32(1),
		VPCZoneIdentifier: awssdk.String(a.subnet(ipOf(motoNodeName()))),
		LaunchTemplate:    &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: &lt, Version: awssdk.String("$Default")}})
	a.must(err)
	groups, err := a.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	a.must(err)
	desc, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{awssdk.ToString(groups.AutoScalingGroups[0].Instances[0].InstanceId)}})
	a.must(err)
	asgInst := desc.Reservations[0].Instances[0]
	asgNode := awssdk.ToString(asgInst.PrivateDnsName)
	createNode(t, asgNode, asgInst, nil)

	// The managed node group on $Latest, and a Node of it launched from version 2.
	const nodegroup = "e2e-ng-latest"
	ngNode := motoNodeName()
	_, err = a.eks.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: awssdk.String(eksClusterName), NodegroupName: awssdk.String(nodegroup),
		NodeRole: awssdk.String("arn:aws:iam::" + motoserver.Account + ":role/eks-node"), Subnets: []string{a.subnet(ipOf(ngNode))},
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: &lt, Version: awssdk.String("$Latest")}})
	a.must(err)
	ngInst := a.instance(ngNode, clusterTags, func(in *ec2.RunInstancesInput) {
		in.LaunchTemplate = &ec2types.LaunchTemplateSpecification{LaunchTemplateId: &lt, Version: awssdk.String("2")}
	})
	createNode(t, ngNode, ngInst, map[string]string{"eks.amazonaws.com/nodegroup": nodegroup})

	u := a.user()
	r := u.run("doctor", "--aws", "--ignore", "NK312,NK313,NK801,NK802")
	if r.code != exitFindings {
		t.Fatalf("want exit 3 (NK632), got:\n%s", r)
	}
	var nk632 []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "iptables flush") {
			nk632 = append(nk632, l)
		}
	}
	if len(nk632) != 1 || !strings.Contains(nk632[0], lt+" version 1") || !strings.Contains(nk632[0], "1 node") {
		t.Errorf("want one iptables flush finding on %s version 1 with its 1 node, got %q:\n%s", lt, nk632, r)
	}
	mustContain(t, r, r.stdout, "NK632")
	if strings.Contains(r.stdout, lt+" version 2") {
		t.Errorf("version 2 (no user data) is reported:\n%s", r)
	}

	calls := a.calls(t, 0, r)
	asked := map[string]bool{}
	for _, c := range calls {
		asked[c.Service+":"+c.Operation] = true
		if c.Operation == "DescribeLaunchTemplateVersions" {
			for k, v := range c.Form {
				if strings.HasPrefix(k, "LaunchTemplateVersion.") {
					asked["version "+v[0]] = true
				}
			}
		}
	}
	for _, want := range []string{"eks:ListNodegroups", "eks:DescribeNodegroup", "autoscaling:DescribeAutoScalingGroups",
		"ec2:DescribeLaunchTemplateVersions", "version $Latest", "version $Default"} {
		if !asked[want] {
			t.Errorf("doctor did not ask for %s: %v", want, a.srv.Operations())
		}
	}
}
