package motoserver_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/nodekeeper/nodekeeper/internal/test/motoserver"
)

// TestFrontRecordsAndForwards: a VPC made through moto's own address is seen through the
// front by a client configured from the environment alone (AWS_ENDPOINT_URL, as the binary is),
// and the front records that client's calls, not the set-up's; a routed operation goes to its
// handler instead of moto.
func TestFrontRecordsAndForwards(t *testing.T) {
	ctx := context.Background()
	srv := motoserver.Start(t)
	setup := ec2.NewFromConfig(srv.Config(t, "eu-west-1"))
	vpc, err := setup.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: awssdk.String("10.7.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	// The developer's own AWS configuration must not leak in: every AWS_ variable unset, then
	// the front's environment.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	for _, kv := range srv.Env(t, "eu-west-1") {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: awssdk.String("vpc-id"), Values: []string{*vpc.Vpc.VpcId}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Vpcs) != 1 || *out.Vpcs[0].CidrBlock != "10.7.0.0/16" {
		t.Errorf("DescribeVpcs through the front: %+v", out.Vpcs)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Service != "ec2" || calls[0].Operation != "DescribeVpcs" || calls[0].Region != "eu-west-1" || calls[0].Status != http.StatusOK {
		t.Fatalf("recorded %+v, want the one DescribeVpcs signed for eu-west-1", calls)
	}
	if got := calls[0].Filters(); len(got) != 1 || got[0] != "vpc-id="+*vpc.Vpc.VpcId {
		t.Errorf("filters %v", got)
	}

	// A routed operation never reaches moto.
	srv.Route("eks:DescribeCluster", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"cluster":{"name":"routed","status":"ACTIVE"}}`))
	}))
	c, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: awssdk.String("routed")})
	if err != nil {
		t.Fatal(err)
	}
	if awssdk.ToString(c.Cluster.Name) != "routed" {
		t.Errorf("DescribeCluster answered %+v, want the routed handler's", c.Cluster)
	}
	if ops := srv.Operations(); len(ops) != 2 || ops[1] != "eks:DescribeCluster" {
		t.Errorf("operations %v", ops)
	}
}
