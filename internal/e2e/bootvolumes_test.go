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
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/testsupport/awsserver"
)

// TestDoctorAWSBootVolumesAndZombie: bin/nodekeeper doctor --aws --audit-log, with AWS through
// AWS_ENDPOINT_URL: the recently launched node whose gp2 root volume ran out of burst credits is
// NK805 (EC2 DescribeVolumes and CloudWatch GetMetricData over their wire protocols, signed for
// the cluster's region), and the instance of the cluster without a Node is NK801 naming who
// deleted its Node in the audit log file, and the Auto Scaling command that removes it.
func TestDoctorAWSBootVolumesAndZombie(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	booted, zombie := nodeName(), nodeName()
	const bootedID, zombieID = "i-0e2eb007ed000001", "i-0e2e20mb1e000002"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: booted}, Spec: corev1.NodeSpec{ProviderID: "aws:///" + eksRegion + "a/" + bootedID}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), booted, metav1.DeleteOptions{}) })

	now := time.Now()
	launched := now.Add(-20 * time.Minute).Truncate(time.Minute)
	zombieLaunched := now.Add(-5 * time.Hour)
	tags := func(extra ...string) []ec2types.Tag {
		out := []ec2types.Tag{{Key: awssdk.String("eks:cluster-name"), Value: awssdk.String(eksClusterName)}}
		for i := 0; i+1 < len(extra); i += 2 {
			out = append(out, ec2types.Tag{Key: awssdk.String(extra[i]), Value: awssdk.String(extra[i+1])})
		}
		return out
	}
	running := &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}
	cloud := awsfake.New()
	cloud.Clusters[eksClusterName] = ekstypes.Cluster{Name: awssdk.String(eksClusterName), Arn: awssdk.String(eksARN), Status: ekstypes.ClusterStatusActive}
	cloud.Instances = []ec2types.Instance{
		{InstanceId: awssdk.String(bootedID), PrivateDnsName: awssdk.String(booted), InstanceType: ec2types.InstanceTypeM5Large, State: running,
			LaunchTime: &launched, Tags: tags(), RootDeviceName: awssdk.String("/dev/xvda"),
			BlockDeviceMappings: []ec2types.InstanceBlockDeviceMapping{{DeviceName: awssdk.String("/dev/xvda"), Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: awssdk.String("vol-0e2eb007")}}}},
		{InstanceId: awssdk.String(zombieID), PrivateDnsName: awssdk.String(zombie), InstanceType: ec2types.InstanceTypeM5Large, State: running,
			LaunchTime: &zombieLaunched, Tags: tags("aws:autoscaling:groupName", "eks-demo-ng-7f3a")},
	}
	cloud.Volumes = []ec2types.Volume{{VolumeId: awssdk.String("vol-0e2eb007"), VolumeType: ec2types.VolumeTypeGp2, Size: awssdk.Int32(20), Iops: awssdk.Int32(100)}}
	for i, burst := range []float64{60, 30, 0, 0, 0} {
		at := launched.Add(time.Duration(i) * time.Minute)
		dims := map[string]string{"VolumeId": "vol-0e2eb007"}
		cloud.AddMetricSamples("AWS/EBS", "BurstBalance", dims, awsfake.MetricSample{Time: at, Value: burst})
		cloud.AddMetricSamples("AWS/EBS", "VolumeWriteOps", dims, awsfake.MetricSample{Time: at, Value: 2950 * 60})
	}
	srv := awsserver.Start(t, cloud)
	u := awsUser(t, srv)

	deleted := now.Add(-4 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z")
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b6f4b1e-2d7a-4c51-9f3e-5a1c2b3d4e5f","stage":"ResponseComplete","requestURI":"/api/v1/nodes/` + zombie +
		`","verb":"delete","user":{"username":"arn:aws:sts::111122223333:assumed-role/ops/alice","groups":["system:authenticated"]},"sourceIPs":["10.0.0.15"],"userAgent":"kubectl/v1.33.0 (linux/amd64) kubernetes/1d2b3c4","objectRef":{"resource":"nodes","name":"` + zombie +
		`","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"` + deleted + `","stageTimestamp":"` + deleted + `"}` + "\n"
	logPath := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(logPath, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}

	r := u.run("doctor", "--aws", "--audit-log", logPath, "--ignore", "NK312,NK313,NK802")
	if r.code != exitFindings {
		t.Fatalf("want exit 3, got:\n%s", r)
	}
	for _, want := range []string{
		"NK805", booted, "vol-0e2eb007", "burst credits ran out",
		"NK801", zombieID, "Auto Scaling group eks-demo-ng-7f3a", "deleted by arn:aws:sts::111122223333:assumed-role/ops/alice",
		"aws autoscaling terminate-instance-in-auto-scaling-group --instance-id " + zombieID + " --should-decrement-desired-capacity --region " + eksRegion,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r)
		}
	}
	seen := map[string]bool{}
	for _, c := range srv.Calls() {
		seen[c.Service+":"+c.Operation] = true
		if c.Region != eksRegion || c.ErrorCode != "" {
			t.Errorf("%s:%s region %q error %q", c.Service, c.Operation, c.Region, c.ErrorCode)
		}
	}
	for _, op := range []string{"ec2:DescribeVolumes", "cloudwatch:GetMetricData"} {
		if !seen[op] {
			t.Errorf("no %s over the wire: %v", op, srv.Operations())
		}
	}
}
