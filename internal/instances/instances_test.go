package instances_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func instance(id, state, dns string, launched time.Time, tags ...string) ec2types.Instance {
	inst := ec2types.Instance{InstanceId: &id, PrivateDnsName: &dns, LaunchTime: &launched,
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateName(state)}}
	for i := 0; i+1 < len(tags); i += 2 {
		inst.Tags = append(inst.Tags, ec2types.Tag{Key: &tags[i], Value: &tags[i+1]})
	}
	return inst
}

// TestListRunning: each tagging scheme of the cluster finds its instances once, whatever the
// other schemes also find; stopped instances and other clusters' are left out; the calls are
// the pages of the three filters.
func TestListRunning(t *testing.T) {
	old := now.Add(-time.Hour)
	cloud := awsfake.New()
	cloud.PageSize = 2
	cloud.Instances = []ec2types.Instance{
		instance("i-provider", "running", "a", old, "kubernetes.io/cluster/prod", "owned"),
		instance("i-both", "running", "b", old, "kubernetes.io/cluster/prod", "owned", "eks:cluster-name", "prod"),
		instance("i-mng", "running", "c", old, "eks:cluster-name", "prod"),
		instance("i-karpenter", "running", "d", old, "karpenter.sh/nodepool", "default", "eks:eks-cluster-name", "prod"),
		instance("i-stopped", "stopped", "e", old, "kubernetes.io/cluster/prod", "owned"),
		instance("i-other", "running", "f", old, "kubernetes.io/cluster/staging", "owned"),
		instance("i-karpenter-other", "running", "g", old, "karpenter.sh/nodepool", "default", "eks:eks-cluster-name", "staging"),
	}
	l, err := instances.ListRunning(context.Background(), cloud, "prod")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, inst := range l.Running {
		ids = append(ids, *inst.InstanceId)
	}
	slices.Sort(ids)
	if want := []string{"i-both", "i-karpenter", "i-mng", "i-provider"}; !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	// kubernetes.io/cluster/prod: 2 running (1 page); eks:cluster-name: 2 (1 page); Karpenter: 1.
	if l.Calls != 3 || cloud.Calls(instances.PermDescribeInstances) != 3 {
		t.Errorf("made %d calls (fake counted %d), want 3", l.Calls, cloud.Calls(instances.PermDescribeInstances))
	}
	cloud.PageSize = 1
	if l, err = instances.ListRunning(context.Background(), cloud, "prod"); err != nil || l.Calls != 5 {
		t.Errorf("one instance a page: %d calls (%v), want 5", l.Calls, err)
	}
}

func TestClassify(t *testing.T) {
	denied := awsfake.New()
	denied.Deny[instances.PermDescribeInstances] = true
	_, deniedErr := instances.ListRunning(context.Background(), denied, "prod")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"fake IAM denial", deniedErr, instances.FailureDenied},
		{"EC2 throttling", &smithy.GenericAPIError{Code: "RequestLimitExceeded"}, instances.FailureThrottled},
		{"generic throttling", &smithy.GenericAPIError{Code: "Throttling"}, instances.FailureThrottled},
		{"other API error", &smithy.GenericAPIError{Code: "InternalError"}, instances.FailureOther},
		{"network", errors.New("dial tcp: connection refused"), instances.FailureOther},
	} {
		if got := instances.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestWithoutNode(t *testing.T) {
	nodes := instances.NewNodeSet(3)
	nodes.Add(instances.Node{Name: "ip-10-0-0-1.ec2.internal", ProviderID: "aws:///us-east-1a/i-joined"})
	nodes.Add(instances.Node{Name: "ip-10-0-0-2.ec2.internal"}) // no providerID yet
	nodes.Add(instances.Node{Name: "fargate-x", ProviderID: "aws:///us-east-1a/fargate-x"})
	running := []ec2types.Instance{
		instance("i-joined", "running", "ip-10-0-0-1.ec2.internal", now.Add(-time.Hour)),
		instance("i-by-name", "running", "ip-10-0-0-2.ec2.internal", now.Add(-time.Hour)),
		instance("i-young", "running", "ip-10-0-0-3.ec2.internal", now.Add(-time.Minute)),
		instance("i-orphan-1h", "running", "ip-10-0-0-4.ec2.internal", now.Add(-time.Hour)),
		instance("i-orphan-3h", "running", "ip-10-0-0-5.ec2.internal", now.Add(-3*time.Hour)),
		{InstanceId: strp("i-no-launch-time")},
	}
	got := instances.WithoutNode(running, nodes, now, 10*time.Minute)
	var ids []string
	for _, o := range got {
		ids = append(ids, o.ID())
	}
	if want := []string{"i-orphan-3h", "i-orphan-1h", "i-no-launch-time"}; !slices.Equal(ids, want) {
		t.Fatalf("without Node: %v, want %v (oldest first)", ids, want)
	}
	if got[0].Age != 3*time.Hour || got[2].Age != 0 {
		t.Errorf("ages %v and %v, want 3h and 0", got[0].Age, got[2].Age)
	}
	if nodes.Len() != 3 {
		t.Errorf("Len = %d", nodes.Len())
	}
}

func TestInstanceIDFromProviderID(t *testing.T) {
	for pid, want := range map[string]string{
		"aws:///us-east-1a/i-0abc":              "i-0abc",
		"aws:///i-0abc":                         "i-0abc",
		"aws:///us-east-1a/fargate-ip-10-0-0-1": "",
		"gce://p/z/i-0abc":                      "",
		"":                                      "",
	} {
		if got := instances.InstanceIDFromProviderID(pid); got != want {
			t.Errorf("%q: %q, want %q", pid, got, want)
		}
	}
}

func strp(s string) *string { return &s }

// TestPermissionIsAWSs: the listing's IAM action is the one internal/aws's policy names.
func TestPermissionIsAWSs(t *testing.T) {
	if instances.PermDescribeInstances != nkaws.PermDescribeInstances {
		t.Errorf("instances names %s, internal/aws %s", instances.PermDescribeInstances, nkaws.PermDescribeInstances)
	}
}

// TestListRunningEnds (issue 31 item 7): an EC2 whose every page announces another (a fresh
// NextToken each time) is followed for MaxPages pages of the first tag filter, then the listing
// fails with ErrEndlessPages, which Classify calls an error of its own.
func TestListRunningEnds(t *testing.T) {
	cloud := awsfake.New()
	cloud.EndlessPages = true
	l, err := instances.ListRunning(context.Background(), cloud, "prod")
	if !errors.Is(err, instances.ErrEndlessPages) || l.Calls != instances.MaxPages || len(l.Running) != instances.MaxPages {
		t.Fatalf("%d calls, %d instances, error %v; want %d, %d and ErrEndlessPages", l.Calls, len(l.Running), err, instances.MaxPages, instances.MaxPages)
	}
	if got := instances.Classify(err); got != instances.FailureOther {
		t.Errorf("Classify = %s, want %s", got, instances.FailureOther)
	}
}
