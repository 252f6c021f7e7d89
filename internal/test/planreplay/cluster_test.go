package planreplay

import (
	"context"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// cniImage is the aws-node image of the tests' DaemonSets.
const cniImage = "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2"

// The replay runs simulated kubelets against a real API server; no controller runs.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// The plan, read from the cluster, is replayed: simulated kubelets register the planned nodes at
// once with the plan's maxPods, and each node's simulated ipamd takes its pods' addresses from
// the subnets. The fleet reaches the plan's figures: every node holds what the plan says until
// the first node whose subnet is short, which is the node the plan names; the pods per node
// that get an address, and the first node where pods wait, are the plan's.
func TestReplayReachesThePlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	free := []plan.Subnet{{ID: "subnet-a", Zone: "us-west-2a", Free: 300}, {ID: "subnet-b", Zone: "us-west-2b", Free: 200}}
	for ci, tc := range []struct {
		name    string
		awsNode map[string]string
		req     gather.Request
		limit   string // the plan's first limit to break, which the fleet must reach at the same node
	}{
		// 12 pods on m5.large hold 3 whole ENIs (27 + 3 addresses) under WARM_ENI_TARGET=1:
		// subnet-b's 200 hold 6 nodes, so its 7th, the 14th node, is short (of its warm ENI
		// first: its pods still get addresses, and the first pods wait on b's 8th node).
		{name: "warm ENI", awsNode: map[string]string{"WARM_ENI_TARGET": "1"}, limit: plan.LimitSubnet,
			req: gather.Request{Nodegroup: "replay-eni", InstanceType: "m5.large", Add: 20, PodsPerNode: 12, PullsPerNode: 5,
				Subnets: []string{"subnet-a", "subnet-b"}, SubnetsFree: free}},
		// WARM_IP_TARGET=2 and MINIMUM_IP_TARGET=10: 12 addresses on 2 ENIs, 14 a node.
		{name: "warm IP", awsNode: map[string]string{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "10"}, limit: plan.LimitSubnet,
			req: gather.Request{Nodegroup: "replay-ip", InstanceType: "m5.large", Add: 40, PodsPerNode: 12, PullsPerNode: 5,
				Subnets: []string{"subnet-a", "subnet-b"}, SubnetsFree: free}},
		// maxPods 40 on m5.large, whose addresses allow 29: 11 pods of every node wait.
		{name: "pods per node", awsNode: map[string]string{}, limit: plan.LimitPods,
			req: gather.Request{Nodegroup: "replay-pods", InstanceType: "m5.large", Add: 6, MaxPods: 40, PullsPerNode: 5,
				Subnets: []string{"subnet-a", "subnet-b"}, SubnetsFree: []plan.Subnet{{ID: "subnet-a", Zone: "us-west-2a", Free: 5000}, {ID: "subnet-b", Zone: "us-west-2b", Free: 5000}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := "aws-node-" + tc.req.Nodegroup
			env.CreateAWSNode(t, ds, cniImage, tc.awsNode)
			in, err := gather.Gather(ctx, env.AdminConfig(), gather.Options{AWSNodeNamespace: "kube-system", AWSNodeName: ds, ChunkSize: 500}, []gather.Request{tc.req})
			if err != nil {
				t.Fatal(err)
			}
			in.EC2 = plan.EC2Buckets{Mutating: plan.Bucket{Capacity: 1 << 30, Refill: 1 << 20}, Source: "test"}
			res, err := plan.Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Today
			if p.FirstToBreak != tc.limit {
				t.Fatalf("the plan's first limit is %q, want %s: %+v", p.FirstToBreak, tc.limit, p.Limits)
			}
			fleet := kubeletsim.NewFleet(env.NodeConfig)
			t.Cleanup(fleet.StopAll)
			r, err := Run(ctx, in, p, Options{Fleet: fleet, Client: admin, Name: func(i int) string { return kubeletsim.NodeName(1000*(ci+1) + i) }})
			if err != nil {
				t.Fatal(err)
			}
			g, l := p.Groups[0], p.Limit(tc.limit)
			t.Logf("plan: %s breaks at node %d (%s); fleet: first short %d, first waiting %d", tc.limit, l.BreaksAt, l.Where, r.FirstShort, r.FirstWaiting)
			switch tc.limit {
			case plan.LimitSubnet:
				if r.FirstShort != l.BreaksAt {
					t.Errorf("the fleet's first node short of subnet addresses is %d, the plan's %d", r.FirstShort, l.BreaksAt)
				}
				if sub := p.Limit(plan.LimitSubnet); r.Nodes[r.FirstShort-1].NodeSubnet != sub.Where {
					t.Errorf("the fleet ran out in %s, the plan in %s", r.Nodes[r.FirstShort-1].NodeSubnet, sub.Where)
				}
			case plan.LimitPods:
				if r.FirstWaiting != l.BreaksAt {
					t.Errorf("the fleet's first node with pods waiting is %d, the plan's %d", r.FirstWaiting, l.BreaksAt)
				}
			}
			for i, n := range r.Nodes {
				if r.FirstShort > 0 && i+1 >= r.FirstShort {
					break
				}
				if n.MaxPods != g.MaxPods || n.Pods != min(g.PodsPerNode, g.MaxPods) {
					t.Errorf("%s registered maxPods %d and runs %d pods; the plan says %d and %d", n.Name, n.MaxPods, n.Pods, g.MaxPods, g.PodsPerNode)
				}
				if n.Addresses != g.Holding.Addresses || n.ENIs != g.Holding.ENIs || n.NodeSubnetTaken != g.Holding.NodeSubnet || n.Prefixes != g.Holding.Prefixes {
					t.Errorf("%s holds %d addresses (%d prefixes) on %d ENIs, %d from its subnet; the plan says %+v", n.Name, n.Addresses, n.Prefixes, n.ENIs, n.NodeSubnetTaken, g.Holding)
				}
				// The pods that get an address are those the addresses allow (the plan's
				// address capacity, host-network pods aside).
				if got, want := n.PodAddresses-n.Waiting, min(n.PodAddresses, g.AddressCapacity-2); got != want {
					t.Errorf("%s: %d pods got an address, the plan's capacity allows %d", n.Name, got, want)
				}
				if n.Calls < g.Holding.EC2Calls {
					t.Errorf("%s made %d EC2 calls, fewer than the plan's %d", n.Name, n.Calls, g.Holding.EC2Calls)
				}
			}
		})
	}
}
