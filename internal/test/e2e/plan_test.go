//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TestPlanAWS: plan --aws --nodegroup reads the node group's subnets from its Nodes' instances
// (DescribeInstances by instance ID) and their free addresses (DescribeSubnets) from moto. The
// subnet also holds an ENI with secondary addresses, as ipamd's warm pool holds them: the free
// addresses plan works from are the ones EC2 says the subnet has left (AvailableIpAddressCount,
// which counts every ENI's addresses and the five AWS reserves in each subnet).
func TestPlanAWS(t *testing.T) {
	ctx := context.Background()
	a := newAccount(t)
	const nodegroup = "e2e-plan"
	const awsNode = "aws-node-e2e-plan"
	env.CreateAWSNode(t, awsNode, "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1", map[string]string{"WARM_ENI_TARGET": "1"})
	var subnet string
	for range 2 {
		name := motoNodeName()
		inst := a.instance(name, clusterTags)
		subnet = awssdk.ToString(inst.SubnetId)
		createNode(t, name, inst, map[string]string{"eks.amazonaws.com/nodegroup": nodegroup, "node.kubernetes.io/instance-type": "m5.large",
			"topology.kubernetes.io/zone": eksRegion + "a"})
	}
	// An ENI of the subnet with 150 secondary addresses.
	_, err := a.ec2.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: &subnet, SecondaryPrivateIpAddressCount: awssdk.Int32(150)})
	a.must(err)
	subnets, err := a.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{subnet}})
	a.must(err)
	free := int(awssdk.ToInt32(subnets.Subnets[0].AvailableIpAddressCount))
	if free <= 0 || free >= 251-2 {
		t.Fatalf("moto says %s has %d free addresses: the ENI's are not counted", subnet, free)
	}

	u := a.user()
	// 20 m5.large nodes holding 30 addresses each do not fit: exit 3.
	r := u.expect(exitFindings, "plan", "--aws", "--aws-node", "kube-system/"+awsNode, "--nodegroup", nodegroup, "--add", "20", "-o", "json")
	var doc struct {
		Today struct {
			Subnets []struct {
				ID   string `json:"id"`
				Free int    `json:"free"`
			} `json:"subnets"`
			Limits []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Where  string `json:"where"`
			} `json:"limits"`
		} `json:"today"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r)
	}
	if s := doc.Today.Subnets; len(s) != 1 || s[0].ID != subnet || s[0].Free != free {
		t.Errorf("subnets %+v, want %s with its %d free addresses:\n%s", s, subnet, free, r)
	}
	breaks := false
	for _, l := range doc.Today.Limits {
		breaks = breaks || l.ID == "subnet-addresses" && l.Status == "breaks" && l.Where == subnet
	}
	if !breaks {
		t.Errorf("the subnet's addresses are not a limit that breaks: %+v", doc.Today.Limits)
	}
	calls := a.calls(t, 0, r)
	if got := filtersOf(calls, "DescribeSubnets"); len(got) != 1 || got[0] != "subnet-id="+subnet {
		t.Errorf("DescribeSubnets filters %v, want subnet-id=%s", got, subnet)
	}
	if got := filtersOf(calls, "DescribeInstances"); len(got) != 1 || !strings.HasPrefix(got[0], "instance-id=") {
		t.Errorf("DescribeInstances filters %v, want the Nodes' instance IDs", got)
	}
}
