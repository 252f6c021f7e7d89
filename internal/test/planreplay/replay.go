package planreplay

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/plan"
)

// Options say how to run the fleet.
type Options struct {
	// Fleet starts the simulated kubelets; Client reads the Nodes they register.
	Fleet  *kubeletsim.Fleet
	Client kubernetes.Interface
	// Name gives the i-th new node's name (0-based, in the plan's order).
	Name func(i int) string
	// Parallel bounds the registrations in flight (default 16): the nodes arrive at once.
	Parallel int
	// Nodes bounds the nodes replayed (0: the plan's).
	Nodes int
}

// Node is what one simulated node reached.
type Node struct {
	Name, Group           string
	NodeSubnet, PodSubnet string
	// MaxPods is the pod capacity its kubelet registered; Pods the pods scheduled there (the
	// plan's pods per node, at most MaxPods); PodAddresses those that need an address (without
	// the two host-network pods); Waiting those still waiting for one.
	MaxPods, Pods, PodAddresses, Waiting int
	// ENIs, Addresses and Prefixes are what its ipamd holds; NodeSubnet/PodSubnetTaken what it
	// took from each subnet; Calls its mutating EC2 calls.
	ENIs, Addresses, Prefixes       int
	NodeSubnetTaken, PodSubnetTaken int
	Calls                           int
	// Short: a call failed for want of free addresses in its subnet.
	Short bool
}

// Result is the fleet's figures.
type Result struct {
	Nodes []Node
	// FirstShort is the first node (1-based, in the plan's order) whose pods waited for want of
	// subnet addresses; 0 when none did.
	FirstShort int
	// FirstWaiting is the first node with a pod waiting for an address for any reason (the
	// subnet, or the node's ENIs); 0 when none had.
	FirstWaiting int
	VPC          *VPC
}

// Run replays in's groups: it registers the planned nodes with simulated kubelets, all at
// once, with the plan's maxPods for their group, then brings up each node's pods in the plan's
// order, each node on its group's next placement (an Auto Scaling group balancing its zones),
// and its simulated ipamd takes addresses from the subnets in's free counts.
func Run(ctx context.Context, in plan.Input, p *plan.Plan, o Options) (*Result, error) {
	s := eni.ParseSettings(in.Env)
	type slot struct {
		g    int
		rank int
	}
	var order []slot
	for gi, g := range in.Groups {
		for k := 0; k < g.Add; k++ {
			order = append(order, slot{gi, k})
		}
	}
	if o.Nodes > 0 && o.Nodes < len(order) {
		order = order[:o.Nodes]
	}
	if o.Parallel <= 0 {
		o.Parallel = 16
	}
	cfgs := make([]kubeletsim.Config, len(order))
	for i, sl := range order {
		g, gp := in.Groups[sl.g], p.Groups[sl.g]
		zone := ""
		if len(g.Placements) > 0 {
			zone = g.Placements[sl.rank%len(g.Placements)].Zone
		}
		cfgs[i] = kubeletsim.Config{Name: o.Name(i), InstanceType: g.Type.Name, NodeGroup: g.Name, Zone: zone, MaxPods: int32(gp.MaxPods), Images: -1}
	}
	if _, err := o.Fleet.StartAll(ctx, cfgs, o.Parallel); err != nil {
		return nil, fmt.Errorf("starting the simulated kubelets: %w", err)
	}
	free := map[string]int{}
	for id, sn := range in.Subnets {
		free[id] = sn.Free
	}
	r := &Result{VPC: NewVPC(free)}
	for i, sl := range order {
		g, gp := in.Groups[sl.g], p.Groups[sl.g]
		n := Node{Name: cfgs[i].Name, Group: g.Name}
		node, err := o.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		capacity := node.Status.Capacity[corev1.ResourcePods]
		n.MaxPods = int(capacity.Value())
		n.Pods = min(gp.PodsPerNode, n.MaxPods)
		n.PodAddresses = max(n.Pods-eni.HostNetworkPods, 0)
		var pl plan.Placement
		if len(g.Placements) > 0 {
			pl = g.Placements[sl.rank%len(g.Placements)]
		}
		n.NodeSubnet = pl.NodeSubnet
		if s.CustomNetworking {
			n.PodSubnet = pl.PodSubnet
		}
		before := snapshot(r.VPC, n.NodeSubnet, n.PodSubnet)
		// The instance launches with its own address from its subnet.
		if !r.VPC.take(n.NodeSubnet, 1) {
			n.Short = true
		}
		d, err := newIPAMD(g.Type, s, g.ReservedENIs, n.NodeSubnet, n.PodSubnet, r.VPC)
		if err != nil {
			return nil, err
		}
		if !n.Short {
			d.reconcile() // ipamd's warm pool before any pod
			for k := 0; k < n.PodAddresses; k++ {
				d.addPod()
			}
		}
		n.Short = n.Short || d.short
		n.Waiting = d.waiting
		if n.Short && !d.short {
			n.Waiting = n.PodAddresses
		}
		n.ENIs, n.Addresses, n.Calls = len(d.slots), d.total(), d.calls
		if d.pd {
			for _, p := range d.slots {
				n.Prefixes += p
			}
		}
		after := snapshot(r.VPC, n.NodeSubnet, n.PodSubnet)
		n.NodeSubnetTaken = before[0] - after[0]
		n.PodSubnetTaken = before[1] - after[1]
		if n.Short && r.FirstShort == 0 {
			r.FirstShort = i + 1
		}
		if n.Waiting > 0 && r.FirstWaiting == 0 {
			r.FirstWaiting = i + 1
		}
		r.Nodes = append(r.Nodes, n)
	}
	return r, nil
}

// snapshot is the free addresses of a node's subnet and pod subnet (a pod subnet that is the
// node subnet, or none, counts 0 so that nothing is taken twice).
func snapshot(v *VPC, nodeSubnet, podSubnet string) [2]int {
	out := [2]int{v.Free[nodeSubnet], 0}
	if podSubnet != "" && podSubnet != nodeSubnet {
		out[1] = v.Free[podSubnet]
	}
	return out
}
