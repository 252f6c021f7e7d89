//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
)

// TestDoctorAWSBootVolumesAndZombie: bin/nodekeeper doctor --aws --audit-log, with AWS through
// AWS_ENDPOINT_URL: the node launched just now whose gp2 root volume ran out of burst credits is
// NK805 (EC2 DescribeVolumes from moto, CloudWatch GetMetricData from awsserver, both signed
// for the cluster's region), and the instance an Auto Scaling group launched for the cluster
// without a Node is NK801, naming who deleted its Node in the audit log file and the Auto Scaling
// command that removes it.
// GetMetricData stays on awsserver (see newAccount), here over the volume's metrics.
func TestDoctorAWSBootVolumesAndZombie(t *testing.T) {
	ctx := context.Background()
	a := newAccount(t)
	a.cluster()
	booted, zombie := motoNodeName(), motoNodeName()

	// The booted node's instance, with its root volume as the AMI maps it.
	img, err := a.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-12c6146b"}})
	a.must(err)
	root := awssdk.ToString(img.Images[0].RootDeviceName)
	inst := a.instance(booted, clusterTags, func(in *ec2.RunInstancesInput) {
		in.BlockDeviceMappings = []ec2types.BlockDeviceMapping{{DeviceName: &root,
			Ebs: &ec2types.EbsBlockDevice{VolumeSize: awssdk.Int32(20), VolumeType: ec2types.VolumeTypeGp2}}}
	})
	volume := ""
	for _, m := range inst.BlockDeviceMappings {
		if awssdk.ToString(m.DeviceName) == awssdk.ToString(inst.RootDeviceName) && m.Ebs != nil {
			volume = awssdk.ToString(m.Ebs.VolumeId)
		}
	}
	if volume == "" {
		t.Fatalf("moto gave the instance no root volume: %+v", inst.BlockDeviceMappings)
	}
	createNode(t, booted, inst, nil)

	// The zombie: the instance of an Auto Scaling group (moto tags it aws:autoscaling:groupName,
	// as Auto Scaling does), whose Node was deleted.
	const group = "eks-demo-ng-7f3a"
	lt := a.template("e2e-zombie-group", "#!/bin/bash\n/etc/eks/bootstrap.sh demo\n")
	_, err = a.asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: awssdk.String(group),
		MinSize: awssdk.Int32(1), MaxSize: awssdk.Int32(1), DesiredCapacity: awssdk.Int32(1),
		VPCZoneIdentifier: awssdk.String(a.subnet(ipOf(zombie))),
		LaunchTemplate:    &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: &lt, Version: awssdk.String("$Default")}})
	a.must(err)
	groups, err := a.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	a.must(err)
	zombieID := awssdk.ToString(groups.AutoScalingGroups[0].Instances[0].InstanceId)
	desc, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{zombieID}})
	a.must(err)
	zombie = awssdk.ToString(desc.Reservations[0].Instances[0].PrivateDnsName)

	// The volume's metrics: out of burst credits in the minute it launched.
	cloud := awsfake.New()
	launched := inst.LaunchTime.UTC().Truncate(time.Minute)
	dims := map[string]string{"VolumeId": volume}
	cloud.AddMetricSamples("AWS/EBS", "BurstBalance", dims, awsfake.MetricSample{Time: launched, Value: 0})
	cloud.AddMetricSamples("AWS/EBS", "VolumeWriteOps", dims, awsfake.MetricSample{Time: launched, Value: 2950 * 60})
	a.srv.Route("cloudwatch:GetMetricData", awsserver.New(cloud))
	u := a.user()

	deleted := time.Now().Add(-4 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z")
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b6f4b1e-2d7a-4c51-9f3e-5a1c2b3d4e5f","stage":"ResponseComplete","requestURI":"/api/v1/nodes/` + zombie +
		`","verb":"delete","user":{"username":"arn:aws:sts::111122223333:assumed-role/ops/alice","groups":["system:authenticated"]},"sourceIPs":["10.0.0.15"],"userAgent":"kubectl/v1.33.0 (linux/amd64) kubernetes/1d2b3c4","objectRef":{"resource":"nodes","name":"` + zombie +
		`","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"` + deleted + `","stageTimestamp":"` + deleted + `"}` + "\n"
	logPath := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(logPath, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}

	r := u.run("doctor", "--aws", "--register-grace", registerGrace, "--audit-log", logPath, "--ignore", "NK312,NK313,NK802")
	if r.code != exitFindings {
		t.Fatalf("want exit 3, got:\n%s", r)
	}
	for _, want := range []string{
		"NK805", booted, volume, "burst credits ran out",
		"NK801", zombieID, "Auto Scaling group " + group, "deleted by arn:aws:sts::111122223333:assumed-role/ops/alice",
		"aws autoscaling terminate-instance-in-auto-scaling-group --instance-id " + zombieID + " --should-decrement-desired-capacity --region " + eksRegion,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r)
		}
	}
	seen := map[string]bool{}
	for _, c := range a.calls(t, 0, r) {
		seen[c.Service+":"+c.Operation] = true
	}
	for _, op := range []string{"ec2:DescribeVolumes", "cloudwatch:GetMetricData"} {
		if !seen[op] {
			t.Errorf("no %s over the wire: %v", op, a.srv.Operations())
		}
	}
}
