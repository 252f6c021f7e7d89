package instances

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodekeeper/nodekeeper/internal/test/motoserver"
)

// TestListRunningPagesMoto: the listing follows MaxResults pages through moto, the model of EC2
// the AWS ecosystem tests against. Seven instances tagged kubernetes.io/cluster/demo (each its
// own reservation: moto pages reservations) at five a page take two pages; one of them also
// carries eks:cluster-name and is listed once; a stopped one and another cluster's are left out.
// The binary's own page is EC2's largest (1,000): moto renders an instance in tens of
// milliseconds, so its two pages are left to the end-to-end tests' smaller calls.
func TestListRunningPagesMoto(t *testing.T) {
	ctx := context.Background()
	srv := motoserver.Start(t)
	api := ec2.NewFromConfig(srv.Config(t, "eu-west-1"))
	run := func(tags ...string) string {
		t.Helper()
		var ts []ec2types.Tag
		for i := 0; i+1 < len(tags); i += 2 {
			ts = append(ts, ec2types.Tag{Key: aws.String(tags[i]), Value: aws.String(tags[i+1])})
		}
		out, err := api.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-12c6146b"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: ts}}})
		if err != nil {
			t.Fatal(err)
		}
		return *out.Instances[0].InstanceId
	}
	var want []string
	for i := range 7 {
		tags := []string{"kubernetes.io/cluster/demo", "owned", "n", strconv.Itoa(i)}
		if i == 3 {
			tags = append(tags, "eks:cluster-name", "demo")
		}
		want = append(want, run(tags...))
	}
	stopped := run("kubernetes.io/cluster/demo", "owned")
	if _, err := api.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{stopped}}); err != nil {
		t.Fatal(err)
	}
	run("kubernetes.io/cluster/other", "owned")

	l, err := listRunning(ctx, api, "demo", 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, inst := range l.Running {
		got = append(got, *inst.InstanceId)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	// Two pages for the cluster tag, one for eks:cluster-name, one for Karpenter's tags.
	if l.Calls != 4 {
		t.Errorf("%d DescribeInstances calls, want 4 (the cluster tag's 7 instances at 5 a page, then one page for each other scheme)", l.Calls)
	}
}
