package plan

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// The limits, in the order they are listed when none breaks.
const (
	LimitSubnet = "subnet-addresses"
	LimitPods   = "pods-per-node"
	LimitEC2    = "ec2-api"
	LimitPulls  = "image-pulls"
	LimitAPF    = "apiserver-priority-level"
)

// limitTitles are the limits' names for people.
var limitTitles = map[string]string{
	LimitSubnet: "Subnet free addresses",
	LimitPods:   "Pods per node",
	LimitEC2:    "EC2 API calls",
	LimitPulls:  "Image pulls",
	LimitAPF:    "API server priority level",
}

// Title is a limit's name for people.
func Title(id string) string { return limitTitles[id] }

// The values of Limit.Kind. A failure leaves pods that never start however long one waits: a pod
// without an address waits in ContainerCreating (subnet addresses, pods per node over the
// addresses), a pod over maxPods is not scheduled on the node, and kubelets whose Lease renewals
// the priority level cannot serve lose their Nodes' Ready condition. A delay only makes the new
// nodes wait: the kubelet retries a refused image pull with back-off, ipamd retries a throttled
// EC2 call until the bucket refills.
const (
	KindFailure = "failure"
	KindDelay   = "delay"
)

// limitKinds are the limits' kinds.
var limitKinds = map[string]string{
	LimitSubnet: KindFailure,
	LimitPods:   KindFailure,
	LimitAPF:    KindFailure,
	LimitEC2:    KindDelay,
	LimitPulls:  KindDelay,
}

// Kind is a limit's kind: KindFailure or KindDelay.
func Kind(id string) string { return limitKinds[id] }

// The values of Limit.Status.
const (
	StatusFits    = "fits"
	StatusBreaks  = "breaks"
	StatusUnknown = "unknown"
)

// Limit is one limit's answer.
type Limit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Kind says whether reaching the limit fails pods (KindFailure) or makes them wait
	// (KindDelay).
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// NodesFit is the most new nodes (counted in the plan's order, and past it by repeating it)
	// that stay within the limit; -1 when the limit sets no bound (a per-node limit that holds,
	// or a bound beyond the nodes simulated).
	NodesFit int `json:"nodesFit"`
	// BreaksAt is the first new node over the limit (NodesFit+1) when Status is breaks.
	BreaksAt int `json:"breaksAt,omitempty"`
	// Where names what runs out (a subnet, a node group).
	Where  string   `json:"where,omitempty"`
	Detail string   `json:"detail"`
	Notes  []string `json:"notes,omitempty"`
	// Fix is the fix that moves the limit furthest; Alternatives the others considered.
	Fix          *Fix  `json:"fix,omitempty"`
	Alternatives []Fix `json:"alternatives,omitempty"`
	// Headroom is what is left of the limit as nodes are added: 1 untouched, 0 reached, below 0
	// over it.
	Headroom []Point `json:"headroom,omitempty"`
	// delaySeconds is what a delay adds at the plan's size (Plan.Delays).
	delaySeconds float64
}

// Delay is what one limit of KindDelay adds to the new nodes' start at the plan's size.
type Delay struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Seconds are added to the start of the new nodes' pods: the longest a node's image pulls
	// wait for the kubelet's pull bucket, or until every address with EC2 throttling ipamd.
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail"`
}

// Point is the headroom after Nodes new nodes.
type Point struct {
	Nodes    int     `json:"nodes"`
	Headroom float64 `json:"headroom"`
}

// Fix is one way to move a limit.
type Fix struct {
	Text string `json:"text"`
	// Set are the aws-node settings the fix changes (what `--set` would try).
	Set map[string]string `json:"set,omitempty"`
	// NodesFit is the limit's NodesFit with the fix (-1: no bound).
	NodesFit int `json:"nodesFit"`
	// Next names the limit that breaks first with the fix, if another does.
	Next string `json:"next,omitempty"`
}

// GroupPlan is what the plan computed for one node group.
type GroupPlan struct {
	Name          string `json:"name"`
	InstanceType  string `json:"instanceType"`
	Add           int    `json:"add"`
	PodsPerNode   int    `json:"podsPerNode"`
	MaxPods       int    `json:"maxPods"`
	MaxPodsSource string `json:"maxPodsSource"`
	// AddressCapacity is the most pods the node's addresses allow (the calculator without its
	// 110/250 ceiling, host-network pods included).
	AddressCapacity int         `json:"addressCapacity"`
	Holding         Holding     `json:"holding"`
	PullsPerNode    int         `json:"pullsPerNode"`
	Kubelet         Kubelet     `json:"kubelet"`
	Placements      []Placement `json:"placements,omitempty"`
	// OS and Provisioner are what the group's nodes run and were launched by, when known.
	OS          rules.NodeOS      `json:"os,omitempty"`
	Provisioner rules.Provisioner `json:"provisioner,omitempty"`
}

// SubnetPlan is one subnet's addresses before and after the plan.
type SubnetPlan struct {
	Subnet
	// Taken are the addresses the plan's nodes take; Nodes how many land there (as node or
	// pod subnet); Left what is free after (negative: short).
	Taken int `json:"taken"`
	Nodes int `json:"nodes"`
	Left  int `json:"left"`
}

// Plan is the answer for one set of aws-node settings.
type Plan struct {
	// Mode is the VPC CNI's address mode in words; Settings the aws-node variables that decide
	// the holdings, as in effect.
	Mode     string            `json:"mode"`
	Settings map[string]string `json:"settings"`
	Add      int               `json:"add"`
	Groups   []GroupPlan       `json:"groups"`
	Subnets  []SubnetPlan      `json:"subnets,omitempty"`
	// Limits lists the limits, the first to break first, then the others by how soon they are
	// reached; unknown ones last.
	Limits []Limit `json:"limits"`
	// Fits: no limit breaks within Add nodes, neither a failure nor a delay past its bound.
	// FirstToFail is the ID of the first failure that breaks; FirstToBreak is the same when
	// one does, else the first delay past its bound.
	Fits         bool   `json:"fits"`
	FirstToFail  string `json:"firstToFail,omitempty"`
	FirstToBreak string `json:"firstToBreak,omitempty"`
	// Delays are the delays and the seconds each adds at the plan's size, one per limit of
	// KindDelay that could be computed.
	Delays []Delay `json:"delays"`
	// AddressWaitSeconds is the expected time for every new node to get its addresses with EC2
	// throttling ipamd's calls.
	AddressWaitSeconds float64    `json:"addressWaitSeconds"`
	EC2                EC2Buckets `json:"ec2"`
	MaxAddressWait     string     `json:"maxAddressWait"`
}

// settingNames are the aws-node variables a plan shows.
var settingNames = []string{eni.EnvPrefixDelegation, eni.EnvCustomNetworking, eni.EnvWarmENITarget, eni.EnvWarmIPTarget,
	eni.EnvMinimumIPTarget, eni.EnvWarmPrefixTarget, eni.EnvMaxENI}

// maxSimulated bounds how far past the plan the node sequence is followed to find where a limit
// that holds would be reached.
func maxSimulated(total int) int { return min(max(total*20, 2000), 200000) }

// Compute computes the plan for in.
func Compute(in Input) (*Plan, error) {
	if len(in.Groups) == 0 {
		return nil, errors.New("no node group to add nodes to")
	}
	s := eni.ParseSettings(in.Env)
	if in.EC2.Mutating.Capacity == 0 && in.EC2.Mutating.Refill == 0 {
		in.EC2 = DefaultEC2Buckets()
	}
	if in.MaxAddressWait <= 0 {
		in.MaxAddressWait = DefaultMaxAddressWait
	}
	p := &Plan{Mode: modeText(s), Settings: map[string]string{}, EC2: in.EC2, MaxAddressWait: in.MaxAddressWait.String()}
	for _, name := range settingNames {
		if v, ok := in.Env[name]; ok {
			p.Settings[name] = v
		}
	}
	for _, g := range in.Groups {
		if g.Add < 0 {
			return nil, fmt.Errorf("node group %q: cannot add %d nodes", g.Name, g.Add)
		}
		gp, err := planGroup(g, s)
		if err != nil {
			return nil, fmt.Errorf("node group %q: %w", g.Name, err)
		}
		p.Add += g.Add
		p.Groups = append(p.Groups, gp)
	}
	if p.Add == 0 {
		return nil, errors.New("the plan adds no node")
	}
	seq := newSequence(p.Groups, maxSimulated(p.Add))
	sub, subnets := subnetLimit(seq, p, in.Subnets, s.CustomNetworking)
	if s.PrefixDelegation && sub.Status != StatusUnknown {
		// A prefix is 16 aligned addresses: secondary addresses scattered over the subnet leave
		// fewer free /28s than free addresses / 16, and DescribeSubnets does not say how many.
		sub.Notes = append(sub.Notes, "prefix delegation: each /28 prefix needs 16 aligned free addresses; this counts free addresses, an upper bound when other ENIs' secondary addresses fragment the subnet (a subnet CIDR reservation of type prefix keeps /28s whole)")
		for _, sn := range subnets {
			if lo, hi, ok := FreePrefixes(sn.CIDR, sn.Free); ok {
				sub.Notes = append(sub.Notes, fmt.Sprintf("%s: between %d (every used address in its own /28) and %d free /28 prefixes", sn.ID, lo, hi))
			}
		}
	}
	p.Subnets = subnets
	ec2, wait := ec2Limit(seq, p, in)
	p.AddressWaitSeconds = wait
	p.Limits = []Limit{sub, podsLimit(seq, p), ec2, pullsLimit(seq, p), apfLimit(p, in)}
	rank(p)
	return p, nil
}

// FreePrefixes bounds the free aligned /28 blocks of an IPv4 subnet with free addresses: at
// most free/16, and at least the subnet's blocks less those holding AWS's five reserved
// addresses (the first four and the last) and one per address in use, were every used address
// in a block of its own. ok is false for a CIDR that is not an IPv4 prefix of /28 or larger.
func FreePrefixes(cidr string, free int) (lo, hi int, ok bool) {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil || !pfx.Addr().Is4() || pfx.Bits() > 28 {
		return 0, 0, false
	}
	size := 1 << (32 - pfx.Bits())
	blocks := size / eni.IPsPerPrefix
	reserved := 2 // the block of the first four addresses and the block of the last
	if blocks == 1 {
		reserved = 1
	}
	used := max(size-5-free, 0)
	hi = min(free/eni.IPsPerPrefix, blocks-reserved)
	lo = min(max(blocks-reserved-used, 0), hi)
	return lo, hi, true
}

// planGroup computes a group's per-node figures under settings s.
func planGroup(g Group, s eni.Settings) (GroupPlan, error) {
	gp := GroupPlan{Name: g.Name, InstanceType: g.Type.Name, Add: g.Add, MaxPods: g.MaxPods, MaxPodsSource: g.MaxPodsSource,
		Kubelet: g.Kubelet, Placements: g.Placements, OS: g.OS, Provisioner: g.Provisioner}
	if gp.MaxPods <= 0 {
		mp, err := DefaultMaxPods(g.Type, s)
		if err != nil {
			return gp, err
		}
		gp.MaxPods, gp.MaxPodsSource = mp, "the EKS AMI's value for "+g.Type.Name+" (max-pods-calculator.sh, nodeadm)"
	}
	gp.PodsPerNode = g.PodsPerNode
	if gp.PodsPerNode <= 0 {
		gp.PodsPerNode = gp.MaxPods
	}
	calc, err := eni.Calculate(g.Type, eni.Options{CustomNetworking: s.CustomNetworking, PrefixDelegation: s.PrefixDelegation,
		MaxENI: s.EffectiveMaxENI(), ReservedENIs: ReservedENIs(g.Type, s, g.ReservedENIs), ShowMaxAllowed: true, BareMetalPrefixDelegation: true})
	if err != nil {
		return gp, err
	}
	gp.AddressCapacity = calc.MaxAllowed
	// The pods that get addresses are those the node can hold: more wait in ContainerCreating
	// and hold nothing more.
	if gp.Holding, err = Hold(g.Type, s, g.ReservedENIs, min(gp.PodsPerNode, gp.MaxPods)); err != nil {
		return gp, err
	}
	gp.PullsPerNode = g.PullsPerNode
	if gp.PullsPerNode <= 0 {
		gp.PullsPerNode = max(min(gp.PodsPerNode, gp.MaxPods)-eni.HostNetworkPods, 0)
	}
	if gp.Kubelet.Source == "" {
		gp.Kubelet = DefaultKubelet()
	}
	return gp, nil
}

func modeText(s eni.Settings) string {
	m := "secondary IP mode"
	if s.PrefixDelegation {
		m = "prefix delegation (on Nitro types)"
	}
	if s.CustomNetworking {
		m += ", custom networking"
	}
	return m
}

// sequence is the order new nodes are added in: the groups in turn, each whole, then the same
// again past the plan (to find how far a limit that holds would go).
type sequence struct {
	groups []int // group index of node i (0-based)
	ranks  []int // the node's index within its group, counting repeats
	total  int   // nodes in the plan itself
}

func newSequence(groups []GroupPlan, limit int) sequence {
	var s sequence
	for _, g := range groups {
		s.total += g.Add
	}
	seen := make([]int, len(groups))
	for len(s.groups) < limit {
		for gi, g := range groups {
			for k := 0; k < g.Add && len(s.groups) < limit; k++ {
				s.groups = append(s.groups, gi)
				s.ranks = append(s.ranks, seen[gi])
				seen[gi]++
			}
		}
	}
	return s
}

// samples are the node counts the headroom is given at: about 60 points from 0 to the plan's
// nodes.
func samples(total int) []int {
	step := max(1, total/60)
	var out []int
	for n := 0; n < total; n += step {
		out = append(out, n)
	}
	return append(out, total)
}

// finish sets a limit's status from NodesFit against the plan's nodes.
func (l *Limit) finish(total int) {
	l.Title, l.Kind = Title(l.ID), Kind(l.ID)
	switch {
	case l.Status == StatusUnknown:
	case l.NodesFit >= 0 && l.NodesFit < total:
		l.Status, l.BreaksAt = StatusBreaks, l.NodesFit+1
	default:
		l.Status = StatusFits
	}
}

// subnetLimit places the nodes one by one, each group's on its placements in turn (an Auto
// Scaling group balancing its zones; a node needs only its own address to launch, so a subnet
// short of pod addresses still gets its turn): each node takes its holding from its placement's
// subnets (the node subnet, and with custom networking the ENIConfig's), and the limit is reached
// at the first node whose subnet cannot hold it.
func subnetLimit(seq sequence, p *Plan, known map[string]Subnet, custom bool) (Limit, []SubnetPlan) {
	l := Limit{ID: LimitSubnet, NodesFit: -1}
	free := map[string]int{}
	initial := map[string]int{}
	used := map[string]bool{}
	var unknown []string
	for _, g := range p.Groups {
		for _, pl := range g.Placements {
			for _, id := range placementSubnets(pl, custom) {
				if sn, ok := known[id]; ok {
					free[id], initial[id] = sn.Free, sn.Free
					used[id] = true
				} else if !slices.Contains(unknown, id) {
					unknown = append(unknown, id)
				}
			}
		}
	}
	var noPlacement []string
	for _, g := range p.Groups {
		if len(g.Placements) == 0 {
			noPlacement = append(noPlacement, g.Name)
		}
	}
	sort.Strings(unknown)
	if len(noPlacement) > 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("the subnets of node group %s are not known: give --subnet, or --nodegroup with --aws, or subnets in the scenario", strings.Join(noPlacement, ", ")))
	}
	if len(unknown) > 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("free addresses of %s not known (they need --aws, or the scenario's subnets): not counted", strings.Join(unknown, ", ")))
	}
	if len(free) == 0 {
		l.Status = StatusUnknown
		l.Detail = "no subnet's free addresses are known"
		l.finish(seq.total)
		return l, nil
	}
	taken := map[string]int{}
	nodes := map[string]int{}
	headroom := func() float64 {
		h := 1.0
		for id, f := range free {
			if initial[id] > 0 {
				h = math.Min(h, float64(f)/float64(initial[id]))
			} else {
				h = math.Min(h, 0)
			}
		}
		return h
	}
	want := samples(seq.total)
	if want[0] == 0 {
		l.Headroom = append(l.Headroom, Point{0, headroom()})
		want = want[1:]
	}
	for i := range seq.groups {
		g := p.Groups[seq.groups[i]]
		if len(g.Placements) == 0 {
			continue
		}
		// The node launches in its placement's subnet as long as that has an address for the
		// node itself; whether its pods then get theirs is the limit.
		pl := g.Placements[seq.ranks[i]%len(g.Placements)]
		needs := subnetNeeds(pl, g.Holding, custom)
		var short []string
		for id, n := range needs {
			if f, ok := free[id]; ok && f < n {
				short = append(short, id)
			}
		}
		if len(short) > 0 {
			l.NodesFit = i
			sort.Strings(short)
			l.Where = strings.Join(short, ", ")
			var left []string
			for _, id := range short {
				left = append(left, fmt.Sprintf("%s (%s) has %d free addresses left", id, known[id].Zone, free[id]))
			}
			l.Detail = fmt.Sprintf("%s; node %d (of %s) needs %s", strings.Join(left, ", "), i+1, g.Name, needText(needs))
			break
		}
		for id, n := range needs {
			if _, ok := free[id]; ok {
				free[id] -= n
				if i < seq.total {
					taken[id] += n
					nodes[id]++
				}
			}
		}
		if len(want) > 0 && want[0] == i+1 {
			l.Headroom = append(l.Headroom, Point{i + 1, headroom()})
			want = want[1:]
		}
	}
	if l.NodesFit < 0 {
		l.Detail = fmt.Sprintf("every subnet has room for more than %d new nodes", len(seq.groups))
	} else if l.NodesFit >= seq.total {
		l.Detail = "fits; " + l.Detail
	}
	for len(want) > 0 { // the limit was reached before these points
		l.Headroom = append(l.Headroom, Point{want[0], math.Min(headroom(), 0)})
		want = want[1:]
	}
	var out []SubnetPlan
	for _, id := range slices.Sorted(maps.Keys(used)) {
		out = append(out, SubnetPlan{Subnet: known[id], Taken: taken[id], Nodes: nodes[id], Left: initial[id] - taken[id]})
	}
	// Nodes that found no room still want their addresses: show the shortfall on the subnet
	// their placement named.
	if l.NodesFit >= 0 && l.NodesFit < seq.total {
		for i := l.NodesFit; i < seq.total; i++ {
			g := p.Groups[seq.groups[i]]
			for id, n := range subnetNeeds(g.Placements[seq.ranks[i]%len(g.Placements)], g.Holding, custom) {
				for k := range out {
					if out[k].ID == id {
						out[k].Taken += n
						out[k].Nodes++
						out[k].Left -= n
					}
				}
			}
		}
	}
	l.finish(seq.total)
	return l, out
}

func placementSubnets(pl Placement, custom bool) []string {
	var out []string
	if pl.NodeSubnet != "" {
		out = append(out, pl.NodeSubnet)
	}
	if custom && pl.PodSubnet != "" && pl.PodSubnet != pl.NodeSubnet {
		out = append(out, pl.PodSubnet)
	}
	return out
}

// subnetNeeds is what one node takes from each subnet of its placement.
func subnetNeeds(pl Placement, h Holding, custom bool) map[string]int {
	out := map[string]int{}
	if pl.NodeSubnet != "" {
		out[pl.NodeSubnet] += h.NodeSubnet
	}
	if custom && pl.PodSubnet != "" {
		out[pl.PodSubnet] += h.PodSubnet
	}
	return out
}

func needText(needs map[string]int) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(needs)) {
		parts = append(parts, fmt.Sprintf("%d from %s", needs[id], id))
	}
	return strings.Join(parts, " and ")
}

// perNodeLimit is a limit each node meets alone (pods per node, image pulls): it is reached at
// the first node of the first group that breaks it.
func perNodeLimit(id string, seq sequence, p *Plan, headroom func(g GroupPlan) float64, breaks func(g GroupPlan) (string, bool)) Limit {
	l := Limit{ID: id, NodesFit: -1}
	worst := 1.0
	n := 0
	var details []string
	for _, g := range p.Groups {
		d, br := breaks(g)
		details = append(details, d)
		if br && l.NodesFit < 0 {
			l.NodesFit, l.Where = n, "node group "+g.Name
		}
		n += g.Add
	}
	if l.NodesFit >= 0 {
		l.Detail = details[indexGroup(p, strings.TrimPrefix(l.Where, "node group "))]
	} else {
		l.Detail = strings.Join(details, "; ")
	}
	start := 0
	for _, at := range samples(seq.total) {
		for start < at && start < len(seq.groups) {
			worst = math.Min(worst, headroom(p.Groups[seq.groups[start]]))
			start++
		}
		l.Headroom = append(l.Headroom, Point{at, worst})
	}
	l.finish(seq.total)
	return l
}

func indexGroup(p *Plan, name string) int {
	for i, g := range p.Groups {
		if g.Name == name {
			return i
		}
	}
	return 0
}

// podsLimit compares the pods each node runs with the addresses its ENIs can hold (the
// calculator's maximum without the 110/250 ceiling) and with the kubelet's maxPods. Pods over the
// address capacity wait in ContainerCreating ("failed to assign an IP address to container");
// pods over maxPods are not scheduled there at all.
func podsLimit(seq sequence, p *Plan) Limit {
	return perNodeLimit(LimitPods, seq, p, func(g GroupPlan) float64 {
		c := float64(max(g.AddressCapacity, 1))
		return math.Min(math.Min(1-float64(g.MaxPods)/c, 1-float64(g.PodsPerNode)/c), 1-float64(g.PodsPerNode)/float64(max(g.MaxPods, 1)))
	}, func(g GroupPlan) (string, bool) {
		switch {
		case g.MaxPods > g.AddressCapacity:
			return fmt.Sprintf("%s: maxPods %d (%s) is above the %d pods its addresses allow: pods beyond %d wait in ContainerCreating for an address",
				g.Name, g.MaxPods, g.MaxPodsSource, g.AddressCapacity, g.AddressCapacity), true
		case g.PodsPerNode > g.AddressCapacity:
			return fmt.Sprintf("%s: %d pods per node, but its addresses allow %d", g.Name, g.PodsPerNode, g.AddressCapacity), true
		case g.PodsPerNode > g.MaxPods:
			return fmt.Sprintf("%s: %d pods per node, but maxPods is %d (%s): the rest are not scheduled", g.Name, g.PodsPerNode, g.MaxPods, g.MaxPodsSource), true
		}
		return fmt.Sprintf("%s: %d pods per node within maxPods %d and the %d its addresses allow", g.Name, g.PodsPerNode, g.MaxPods, g.AddressCapacity), false
	})
}

// pullsLimit compares the image pulls a new node starts at once with the kubelet's pull token
// bucket (registryPullQPS, registryBurst). The kubelet does not queue a pull over the bucket: it
// fails it at once with "pull QPS exceeded" (ErrImagePull) and retries with back-off, so a node
// starting more pulls than registryBurst has pods waiting to start whatever the node count: a
// delay (PullDelay), not a failure. registryPullQPS 0 means no limit.
func pullsLimit(seq sequence, p *Plan) Limit {
	worst := 0.0
	l := perNodeLimit(LimitPulls, seq, p, func(g GroupPlan) float64 {
		if g.Kubelet.RegistryPullQPS <= 0 {
			return 1
		}
		return 1 - float64(g.PullsPerNode)/float64(max(g.Kubelet.RegistryBurst, 1))
	}, func(g GroupPlan) (string, bool) {
		k := g.Kubelet
		if k.RegistryPullQPS <= 0 {
			return fmt.Sprintf("%s: registryPullQPS 0, no pull limit (%s)", g.Name, k.Source), false
		}
		if g.PullsPerNode > k.RegistryBurst {
			over := g.PullsPerNode - k.RegistryBurst
			wait := PullDelay(g.PullsPerNode, k.RegistryPullQPS, k.RegistryBurst)
			worst = math.Max(worst, wait)
			return fmt.Sprintf("%s: %d pulls at start against registryBurst %d and registryPullQPS %d (%s): %d fail with \"pull QPS exceeded\" and retry with the kubelet's back-off, the last starting %s after the first",
				g.Name, g.PullsPerNode, k.RegistryBurst, k.RegistryPullQPS, k.Source, over, seconds(wait)), true
		}
		return fmt.Sprintf("%s: %d pulls at start within registryBurst %d (%s)", g.Name, g.PullsPerNode, k.RegistryBurst, k.Source), false
	})
	l.delaySeconds = worst
	return l
}

// The kubelet's image pull back-off: a refused pull is retried after imageBackOffPeriod, doubling
// on each failure up to MaxImageBackOff (kubernetes v1.36.3 pkg/kubelet/kubelet.go: 10 s and
// 300 s, flowcontrol.NewBackOff).
const (
	imageBackOffPeriod = 10.0
	maxImageBackOff    = 300.0
)

// PullDelay is the seconds from a node's first image pull to its last one's start when pulls
// start at once against the kubelet's pull bucket (registryBurst tokens, refilled at
// registryPullQPS a second): burst of them start, the rest fail with "pull QPS exceeded" and are
// retried together after the back-off, as many as the bucket then holds each time.
func PullDelay(pulls, qps, burst int) float64 {
	if qps <= 0 || pulls <= burst {
		return 0
	}
	burst = max(burst, 1) // a bucket of 0 would admit nothing: counted as 1, as the headroom does
	tokens := float64(burst)
	pending := pulls - min(pulls, burst)
	tokens -= float64(burst)
	t, back := 0.0, imageBackOffPeriod
	for pending > 0 {
		t += back
		tokens = math.Min(float64(burst), tokens+float64(qps)*back)
		take := min(pending, int(tokens))
		pending -= take
		tokens -= float64(take)
		back = math.Min(back*2, maxImageBackOff)
	}
	return t
}

// ec2Limit adds up the mutating EC2 calls of ipamd on the new nodes against the mutating
// actions' token bucket: with every new node asking at once, calls beyond the bucket's capacity
// wait for its refill (ipamd retries throttled calls with back-off), so every address is there
// after (calls - capacity) / refill seconds. The limit is reached at the node whose calls make
// that wait longer than MaxAddressWait. It assumes nothing else in the account and Region draws
// from the bucket meanwhile.
func ec2Limit(seq sequence, p *Plan, in Input) (Limit, float64) {
	l := Limit{ID: LimitEC2, NodesFit: -1}
	b := in.EC2.Mutating
	budget := float64(b.Capacity) + b.Refill*in.MaxAddressWait.Seconds()
	calls := 0
	want := samples(seq.total)
	if want[0] == 0 {
		l.Headroom = append(l.Headroom, Point{0, 1})
		want = want[1:]
	}
	planCalls := 0
	for i, gi := range seq.groups {
		calls += p.Groups[gi].Holding.EC2Calls
		if float64(calls) > budget && l.NodesFit < 0 {
			l.NodesFit = i
		}
		if i+1 == seq.total {
			planCalls = calls
		}
		if len(want) > 0 && want[0] == i+1 {
			l.Headroom = append(l.Headroom, Point{i + 1, 1 - float64(calls)/math.Max(budget, 1)})
			want = want[1:]
		}
		if l.NodesFit >= 0 && i+1 >= seq.total {
			break
		}
	}
	wait := 0.0
	if b.Refill > 0 {
		wait = math.Max(0, float64(planCalls-b.Capacity)/b.Refill)
	} else if planCalls > b.Capacity {
		wait = math.Inf(1)
	}
	l.Detail = fmt.Sprintf("%d mutating EC2 calls (CreateNetworkInterface, AttachNetworkInterface, ModifyNetworkInterfaceAttribute, AssignPrivateIpAddresses) against a bucket of %d refilled at %g/s: every address after about %s; the limit is a wait of %s",
		planCalls, b.Capacity, b.Refill, seconds(wait), in.MaxAddressWait)
	l.Notes = append(l.Notes, "token buckets: "+in.EC2.Source, "ipamd's DescribeNetworkInterfaces and the instances' own RunInstances draw from other buckets and are not counted")
	l.delaySeconds = wait
	l.finish(seq.total)
	return l, wait
}

// apfLimit is the API server's priority level serving the kubelets' Lease renewals (every 10 s:
// a quarter of the 40 s lease) and Node status reports (every 5 minutes when nothing changes),
// against its nominal seats, each write holding a seat for assumedWriteSeconds (Little's law).
func apfLimit(p *Plan, in Input) Limit {
	l := Limit{ID: LimitAPF, NodesFit: -1}
	if in.APF == nil || in.APF.Seats <= 0 {
		l.Status = StatusUnknown
		l.Detail = "the priority level serving node leases and status (node-high) could not be read"
		l.finish(p.Add)
		return l
	}
	perNode := kubeletWritesPerSecond * assumedWriteSeconds
	maxNodes := int(float64(in.APF.Seats) / perNode)
	l.NodesFit = max(maxNodes-in.ExistingNodes, 0)
	l.Where = "priority level " + in.APF.PriorityLevel
	l.Detail = fmt.Sprintf("%d existing and %d new kubelets write %.2f requests/s each (a Lease renewal every 10 s, a status report every 5 minutes); at %g s a write, %s's %d seats (%s) serve %d kubelets",
		in.ExistingNodes, p.Add, kubeletWritesPerSecond, assumedWriteSeconds, in.APF.PriorityLevel, in.APF.Seats, in.APF.Source, maxNodes)
	for _, at := range samples(p.Add) {
		l.Headroom = append(l.Headroom, Point{at, 1 - float64(in.ExistingNodes+at)*perNode/float64(in.APF.Seats)})
	}
	l.finish(p.Add)
	return l
}

// The kubelet's steady writes: the node lease renewed every renewInterval (a quarter of its 40 s
// duration, 10 s) and the Node status reported every nodeStatusReportFrequency (5 minutes) when
// nothing changes. assumedWriteSeconds is how long one holds its seat: a small etcd write.
const (
	kubeletWritesPerSecond = 1.0/10 + 1.0/300
	assumedWriteSeconds    = 0.05
)

// rank orders the limits and sets the plan's verdict.
func rank(p *Plan) {
	order := map[string]int{}
	for i, l := range p.Limits {
		order[l.ID] = i
	}
	// Failures that break first (the first one named is the first to fail), then delays past
	// their bound, then the limits that fit by how soon they are reached.
	key := func(l Limit) (int, int) {
		switch {
		case l.Status == StatusUnknown:
			return 4, 0
		case l.NodesFit < 0:
			return 3, 0
		case l.Status == StatusBreaks && l.Kind == KindFailure:
			return 0, l.NodesFit
		case l.Status == StatusBreaks:
			return 1, l.NodesFit
		}
		return 2, l.NodesFit
	}
	sort.SliceStable(p.Limits, func(i, j int) bool {
		ai, bi := key(p.Limits[i])
		aj, bj := key(p.Limits[j])
		if ai != aj {
			return ai < aj
		}
		if bi != bj {
			return bi < bj
		}
		return order[p.Limits[i].ID] < order[p.Limits[j].ID]
	})
	p.Fits = true
	for _, l := range p.Limits {
		if l.Status == StatusBreaks {
			if p.Fits {
				p.Fits, p.FirstToBreak = false, l.ID
			}
			if l.Kind == KindFailure && p.FirstToFail == "" {
				p.FirstToFail = l.ID
			}
		}
	}
	p.Delays = []Delay{}
	for _, id := range []string{LimitPulls, LimitEC2} {
		if l := p.Limit(id); l != nil && l.Status != StatusUnknown {
			p.Delays = append(p.Delays, Delay{ID: l.ID, Title: l.Title, Seconds: l.delaySeconds, Detail: l.Detail})
		}
	}
}

// seconds writes a duration in seconds for people ("4m10s", "0s").
func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "never"
	}
	return time.Duration(math.Round(s) * float64(time.Second)).String()
}

// Limit returns the limit with id, or nil.
func (p *Plan) Limit(id string) *Limit {
	for i := range p.Limits {
		if p.Limits[i].ID == id {
			return &p.Limits[i]
		}
	}
	return nil
}
