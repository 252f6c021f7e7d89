package ec2loop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekeeper/nodekeeper/internal/controller/ec2loop"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
)

// TestScanOverTheWire runs the loop's real EC2 client (LoadEC2: the SDK's default chain,
// AWS_ENDPOINT_URL) against the local AWS: the scan pages DescribeInstances with MaxResults
// 1000 and the three tag filters, a throttled call is retried by the SDK and the scan succeeds,
// and an IAM denial comes back as the denied result.
func TestScanOverTheWire(t *testing.T) {
	cloud := awsfake.New()
	cloud.PageSize = 2
	for _, id := range []string{"i-1", "i-2", "i-3"} {
		cloud.Instances = append(cloud.Instances, tagged(id, "ip-"+id, epoch.Add(-time.Hour)))
	}
	srv := awsserver.Start(t, cloud)
	srv.Setenv(t, "eu-west-1")
	api, err := ec2loop.LoadEC2(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(node("ip-i-1", "aws:///eu-west-1a/i-1"))
	loop, err := ec2loop.New(ec2loop.Deps{EC2: api, Client: client, Clock: clocktesting.NewFakeClock(epoch)},
		ec2loop.Options{Cluster: "prod", Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	s := loop.ScanOnce(ctx)
	if s.Err != nil || ids(s.WithoutNode) != "i-2,i-3" {
		t.Fatalf("scan: %v, without Node %s; want i-2,i-3", s.Err, ids(s.WithoutNode))
	}
	// kubernetes.io/cluster/prod: 3 instances, 2 pages; the two other schemes: none, 1 page each.
	if got := srv.Count("DescribeInstances"); got != 4 || s.Calls != 4 {
		t.Errorf("%d DescribeInstances on the wire, %d counted by the scan; want 4", got, s.Calls)
	}
	for _, c := range srv.Calls() {
		in, ok := c.Input.(*ec2.DescribeInstancesInput)
		if !ok || c.Region != "eu-west-1" {
			t.Fatalf("%s (%T) signed for region %q", c.Operation, c.Input, c.Region)
		}
		if in.MaxResults == nil || *in.MaxResults != instances.PageSize || len(in.InstanceIds) != 0 {
			t.Errorf("DescribeInstances with MaxResults %v and %d instance IDs; want %d and none", in.MaxResults, len(in.InstanceIds), instances.PageSize)
		}
	}

	srv.FailNext("DescribeInstances", "RequestLimitExceeded", 1)
	if s := loop.ScanOnce(ctx); s.Err != nil || s.Result != ec2loop.ResultSuccess {
		t.Errorf("a throttled call is retried by the SDK: %s %v", s.Result, s.Err)
	}

	cloud.Deny[instances.PermDescribeInstances] = true
	s = loop.ScanOnce(ctx)
	if s.Result != instances.FailureDenied || s.Err == nil || !strings.Contains(s.Err.Error(), "UnauthorizedOperation") {
		t.Errorf("denied over the wire: %s %v", s.Result, s.Err)
	}
}

// TestLoadEC2NeedsARegion: without a region anywhere, LoadEC2 says how to give one.
func TestLoadEC2NeedsARegion(t *testing.T) {
	srv := awsserver.Start(t, awsfake.New())
	srv.Setenv(t, "")
	if _, err := ec2loop.LoadEC2(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "--region") {
		t.Errorf("LoadEC2 without a region: %v, want an error naming --region", err)
	}
}
