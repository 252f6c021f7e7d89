package leasesview

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

func fakeInstance(id, dns string, state ec2types.InstanceStateName, launched time.Time) ec2types.Instance {
	return ec2types.Instance{InstanceId: &id, PrivateDnsName: &dns, InstanceType: "m5.large",
		State: &ec2types.InstanceState{Name: state}, LaunchTime: &launched}
}

// TestAddInstances: leases --aws puts the EC2 instance named like each zombie and leaked node
// lease on its row (the latest launched when a name was reused), with its state and launch
// time, and leaves other rows alone; AccessDenied names the permission.
func TestAddInstances(t *testing.T) {
	opts := fixedOptions()
	opts.Classes = []lease.Class{lease.Leaked, lease.Zombie}
	r := fixtureReport(opts)
	var names []string
	for _, it := range r.Items {
		names = append(names, it.Name)
	}
	if len(names) < 2 {
		t.Fatalf("fixture has %d leaked/zombie leases, want at least 2", len(names))
	}
	now := r.GeneratedAt.Time
	cloud := awsfake.New()
	cloud.PageSize = 1
	cloud.Instances = []ec2types.Instance{
		fakeInstance("i-0old000000000001", names[0], ec2types.InstanceStateNameTerminated, now.Add(-72*time.Hour)),
		fakeInstance("i-0598c7d356eba48d7", names[0], ec2types.InstanceStateNameRunning, now.Add(-26*time.Hour)),
		fakeInstance("i-0stopped00000001", names[1], ec2types.InstanceStateNameStopped, now.Add(-3*time.Hour)),
		fakeInstance("i-0unrelated000001", "ip-10-9-9-9.ec2.internal", ec2types.InstanceStateNameRunning, now.Add(-time.Hour)),
	}
	if err := AddInstances(context.Background(), cloud, r); err != nil {
		t.Fatal(err)
	}
	if i := r.Items[0].Instance; i == nil || i.ID != "i-0598c7d356eba48d7" || i.State != "running" {
		t.Errorf("%s: instance %+v, want the running i-0598c7d356eba48d7", names[0], i)
	}
	if i := r.Items[1].Instance; i == nil || i.ID != "i-0stopped00000001" || i.State != "stopped" {
		t.Errorf("%s: instance %+v", names[1], i)
	}
	var buf bytes.Buffer
	if err := Print(&buf, r, PrintOptions{AllNamespaces: true, NodeColumns: InstanceColumns()}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "table-aws.golden", buf.Bytes())

	cloud.Deny[nkaws.PermDescribeInstances] = true
	err := AddInstances(context.Background(), cloud, fixtureReport(opts))
	var ad *nkaws.AccessDeniedError
	if !errors.As(err, &ad) || ad.Permission != nkaws.PermDescribeInstances {
		t.Errorf("denied: %v", err)
	}
}
