// Package replay checks a plan against a simulated fleet: simulated kubelets (internal/kubeletsim)
// register the planned nodes, at once, in the plan's order, with the plan's maxPods; each node's
// pods then get their addresses from a simulated ipamd that follows the VPC CNI's warm-pool loop
// step by step, pod after pod, against the subnets' free addresses. The figures the fleet
// reaches (addresses and ENIs held per node, addresses taken per subnet, the first node whose
// pods wait for addresses, pods per node that get one) are what the plan predicts in closed
// form.
//
// What the replay does not model: time (EC2 throttling, and so the EC2 limit's node count; it
// counts the calls, which the plan's one-batch count bounds from below), image pulls, and the API
// server's priority level (the simulated kubelets do renew their leases, but the replay does not
// measure the seats they hold).
package planreplay

import (
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/plan"
)

// VPC is the replay's EC2: the subnets' free addresses and the mutating calls made.
type VPC struct {
	Free  map[string]int
	Calls map[string]int
}

// NewVPC returns a VPC with free addresses per subnet ID.
func NewVPC(free map[string]int) *VPC {
	v := &VPC{Free: map[string]int{}, Calls: map[string]int{}}
	for k, n := range free {
		v.Free[k] = n
	}
	return v
}

// take takes n addresses from a subnet whose free addresses are known, as an EC2 call that
// fails whole (InsufficientFreeAddressesInSubnet) when they are not there; a subnet the VPC does
// not know has room.
func (v *VPC) take(subnet string, n int) bool {
	f, ok := v.Free[subnet]
	if !ok {
		return true
	}
	if f < n {
		return false
	}
	v.Free[subnet] = f - n
	return true
}

// ipamd is one node's simulated L-IPAMD: its ENIs and the addresses (or /28 prefixes) on each,
// the pods' addresses in use, the pods waiting for one.
type ipamd struct {
	s                     eni.Settings
	perENI, limit         int // slots per ENI (addresses, or prefixes), ENIs for pods
	pd                    bool
	nodeSubnet, podSubnet string
	slots                 []int // per ENI: addresses, or prefixes with prefix delegation
	used, waiting         int
	calls                 int
	short                 bool // a call failed for want of addresses in the subnet
	vpc                   *VPC
}

func newIPAMD(t eni.InstanceType, s eni.Settings, reservedENIs int, nodeSubnet, podSubnet string, vpc *VPC) (*ipamd, error) {
	calc, err := eni.Calculate(t, eni.Options{CustomNetworking: s.CustomNetworking, PrefixDelegation: s.PrefixDelegation,
		MaxENI: s.EffectiveMaxENI(), ReservedENIs: plan.ReservedENIs(t, s, reservedENIs), ShowMaxAllowed: true, BareMetalPrefixDelegation: true})
	if err != nil {
		return nil, err
	}
	d := &ipamd{s: s, perENI: t.IPv4PerENI - 1, limit: calc.ENIsForPods, pd: calc.PrefixDelegation,
		nodeSubnet: nodeSubnet, podSubnet: podSubnet, vpc: vpc}
	if !s.CustomNetworking {
		d.slots = []int{0} // the primary ENI, whose own address is the node's
		d.podSubnet = nodeSubnet
	}
	return d, nil
}

func (d *ipamd) warmIP() bool { return d.s.WarmIPTarget.Positive() || d.s.MinimumIPTarget.Positive() }

// total is the addresses held.
func (d *ipamd) total() int {
	n := 0
	for _, s := range d.slots {
		n += s
	}
	if d.pd {
		return n * eni.IPsPerPrefix
	}
	return n
}

// want is what the pool should hold with the pods in use and waiting, in addresses (warm-IP
// modes), or says whether it is short (warm ENI and warm prefix modes), as ipamd's pool check
// decides it.
func (d *ipamd) short0() (bool, int) {
	used := d.used + d.waiting
	total := d.total()
	if d.warmIP() {
		want := used
		if d.s.WarmIPTarget.Positive() {
			want += d.s.WarmIPTarget.Value
		}
		if d.s.MinimumIPTarget.Positive() {
			want = max(want, d.s.MinimumIPTarget.Value)
		}
		return total < want, want - total
	}
	if d.pd {
		warm := 1
		if d.s.WarmPrefixTarget.Valid && d.s.WarmPrefixTarget.Value >= 0 {
			warm = d.s.WarmPrefixTarget.Value
		}
		prefixes := total / eni.IPsPerPrefix
		inUse := (used + eni.IPsPerPrefix - 1) / eni.IPsPerPrefix
		free := prefixes - inUse
		n := max(warm-free, 0)
		if d.waiting > 0 && total-d.used < d.waiting {
			n = max(n, 1)
		}
		return n > 0, n * eni.IPsPerPrefix
	}
	warm := eni.DefaultWarmENITarget
	if d.s.WarmENITarget.Valid && d.s.WarmENITarget.Value >= 0 {
		warm = d.s.WarmENITarget.Value
	}
	available := total - used
	need := warm * d.perENI
	if d.waiting > 0 {
		need = max(need, 1)
	}
	return available < need, need - available
}

// reconcile grows the pool until it is not short, the ENIs are full, or the subnet is.
func (d *ipamd) reconcile() {
	for {
		short, n := d.short0()
		if !short || !d.grow(n) {
			return
		}
	}
}

// grow adds to the pool: on the first ENI with room (one AssignPrivateIpAddresses: what is
// short in warm-IP modes, the ENI's every free slot in warm-ENI mode, the prefixes short with
// prefix delegation), else a new ENI (CreateNetworkInterface, AttachNetworkInterface,
// ModifyNetworkInterfaceAttribute; its primary address from the pod subnet).
func (d *ipamd) grow(short int) bool {
	for i, used := range d.slots {
		room := d.perENI - used
		if room <= 0 {
			continue
		}
		k := room
		switch {
		case d.pd:
			k = min(room, max(1, (short+eni.IPsPerPrefix-1)/eni.IPsPerPrefix))
		case d.warmIP():
			k = min(room, max(1, short))
		}
		per := 1
		if d.pd {
			per = eni.IPsPerPrefix
		}
		d.calls++
		d.vpc.Calls["AssignPrivateIpAddresses"]++
		if !d.vpc.take(d.podSubnet, k*per) {
			d.short = true
			return false
		}
		d.slots[i] += k
		return true
	}
	if len(d.slots) >= d.limit {
		return false
	}
	d.calls += 3
	for _, c := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute"} {
		d.vpc.Calls[c]++
	}
	if !d.vpc.take(d.podSubnet, 1) {
		d.short = true
		return false
	}
	d.slots = append(d.slots, 0)
	return true
}

// addPod starts a pod: it takes a free address, or waits; ipamd then reconciles its pool and
// the waiting pods take what it added.
func (d *ipamd) addPod() {
	if d.total()-d.used > 0 {
		d.used++
	} else {
		d.waiting++
	}
	d.reconcile()
	free := d.total() - d.used
	got := min(free, d.waiting)
	d.used += got
	d.waiting -= got
}
