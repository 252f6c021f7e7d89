package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

func twoSubnets(freeA, freeB int) map[string]Subnet {
	return map[string]Subnet{
		"subnet-a": {ID: "subnet-a", Zone: "us-east-1a", Free: freeA},
		"subnet-b": {ID: "subnet-b", Zone: "us-east-1b", Free: freeB},
	}
}

// noPullLimit is registryPullQPS 0.
var noPullLimit = Kubelet{Source: "test"}

var placementsAB = []Placement{{Zone: "us-east-1a", NodeSubnet: "subnet-a"}, {Zone: "us-east-1b", NodeSubnet: "subnet-b"}}

// Each limit's node count, from its formula.
func TestLimits(t *testing.T) {
	big := twoSubnets(1_000_000, 1_000_000)
	huge := EC2Buckets{Mutating: Bucket{Capacity: 1_000_000, Refill: 1000}, Source: "test"}
	for _, tc := range []struct {
		name      string
		in        Input
		limit     string
		wantFit   int // NodesFit
		wantWhere string
		first     bool // the limit is the first to break
	}{
		// 10 pods on m5.large hold 2 whole ENIs (18 addresses + 2 primaries = 20): 200 free
		// addresses hold 10 nodes per subnet; the 21st node finds no room in either.
		{name: "subnet, warm ENI", limit: LimitSubnet, wantFit: 20, wantWhere: "subnet-a", first: true, in: Input{
			Groups:  []Group{{Name: "ng", Type: eni.InstanceType{}, Add: 100, PodsPerNode: 10, Placements: placementsAB}},
			Subnets: twoSubnets(200, 200), EC2: huge}},
		// Uneven subnets: the nodes still alternate (the Auto Scaling group balances its zones,
		// and a node needs one address to launch): a's 200 hold 10, and the 21st node, a's 11th,
		// is short though b has 600 left.
		{name: "subnet, uneven", limit: LimitSubnet, wantFit: 20, wantWhere: "subnet-a", first: true, in: Input{
			Groups:  []Group{{Name: "ng", Add: 100, PodsPerNode: 10, Placements: placementsAB}},
			Subnets: twoSubnets(200, 800), EC2: huge}},
		// WARM_IP_TARGET=2: 8+2 = 10 addresses on 2 ENIs = 12 a node: 16 per subnet.
		{name: "subnet, WARM_IP_TARGET", limit: LimitSubnet, wantFit: 32, wantWhere: "subnet-a", first: true, in: Input{
			Env:    map[string]string{"WARM_IP_TARGET": "2"},
			Groups: []Group{{Name: "ng", Add: 100, PodsPerNode: 10, Placements: placementsAB}}, Subnets: twoSubnets(200, 200), EC2: huge}},
		// Custom networking: the node subnet gives 1 address a node, the ENIConfig's subnet the
		// pods' 18 + 2 ENI primaries. Image pulls (18 against the kubelet's burst 10) are refused
		// from node 1, but they are a delay: the first to fail, and first named, is the subnet.
		{name: "subnet, custom networking", limit: LimitSubnet, wantFit: 5, wantWhere: "subnet-pods", first: true, in: Input{
			Env: map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
			Groups: []Group{{Name: "ng", Add: 100, PodsPerNode: 20, MaxPods: 20, Placements: []Placement{
				{Zone: "us-east-1a", NodeSubnet: "subnet-a", ENIConfig: "us-east-1a", PodSubnet: "subnet-pods"}}}},
			Subnets: map[string]Subnet{"subnet-a": {ID: "subnet-a", Free: 1000}, "subnet-pods": {ID: "subnet-pods", Free: 110}}, EC2: huge}},
		// The subnet limit holds: the node count is where it would be reached repeating the plan.
		{name: "subnet holds", limit: LimitSubnet, wantFit: 100, in: Input{
			Groups:  []Group{{Name: "ng", Add: 10, PodsPerNode: 10, Placements: placementsAB}},
			Subnets: twoSubnets(1000, 1000), EC2: huge}},
		// The EKS AMI gives m5.large maxPods 29; with custom networking its addresses hold 20
		// (2 ENIs x 9 + 2): the first node breaks.
		{name: "pods per node, custom networking", limit: LimitPods, wantFit: 0, wantWhere: "node group ng", first: true, in: Input{
			Env:    map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
			Groups: []Group{{Name: "ng", Add: 10, Placements: placementsAB}}, Subnets: big, EC2: huge}},
		// A second group breaks it: the limit is reached after the first group's 30 nodes.
		{name: "pods per node, second group", limit: LimitPods, wantFit: 30, wantWhere: "node group big", first: true, in: Input{
			Groups: []Group{{Name: "small", Add: 30, Placements: placementsAB, Kubelet: noPullLimit},
				{Name: "big", Add: 5, PodsPerNode: 40, MaxPods: 110, Placements: placementsAB, Kubelet: noPullLimit}}, Subnets: big, EC2: huge}},
		// EC2: a full m5.large makes 9 mutating calls; a bucket of 50 refilled at 5/s allows
		// 50 + 5*300 = 1550 calls in 5 minutes: 172 nodes.
		{name: "EC2 calls", limit: LimitEC2, wantFit: 172, first: true, in: Input{
			Groups: []Group{{Name: "ng", Add: 300, Placements: placementsAB, Kubelet: noPullLimit}}, Subnets: big}},
		// A one-minute wait: 50 + 300 = 350 calls, 38 nodes.
		{name: "EC2 calls, 1m", limit: LimitEC2, wantFit: 38, first: true, in: Input{MaxAddressWait: time.Minute,
			Groups: []Group{{Name: "ng", Add: 300, Placements: placementsAB, Kubelet: noPullLimit}}, Subnets: big}},
		// 27 pulls at start against the kubelet's default burst of 10.
		{name: "image pulls", limit: LimitPulls, wantFit: 0, wantWhere: "node group ng", first: true, in: Input{
			Groups: []Group{{Name: "ng", Add: 3, Placements: placementsAB}}, Subnets: big, EC2: huge}},
		{name: "image pulls within burst", limit: LimitPulls, wantFit: -1, in: Input{
			Groups: []Group{{Name: "ng", Add: 3, Placements: placementsAB, Kubelet: Kubelet{RegistryPullQPS: 50, RegistryBurst: 50, Source: "test"}}}, Subnets: big, EC2: huge}},
		// APF: 100 seats at 0.05 s a write and 0.1033 writes/s a kubelet serve 19354
		// kubelets; 19000 exist.
		{name: "APF", limit: LimitAPF, wantFit: 354, wantWhere: "priority level node-high", first: true, in: Input{ExistingNodes: 19000,
			APF:    &APF{PriorityLevel: "node-high", Seats: 100, Source: "test"},
			Groups: []Group{{Name: "ng", Add: 1000, Placements: placementsAB, Kubelet: Kubelet{Source: "test"}}}, Subnets: big, EC2: huge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.in.Groups {
				if tc.in.Groups[i].Type.Name == "" {
					tc.in.Groups[i].Type = mustType(t, "m5.large")
				}
			}
			p, err := Compute(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			l := p.Limit(tc.limit)
			if l == nil {
				t.Fatalf("no limit %s", tc.limit)
			}
			if l.NodesFit != tc.wantFit {
				t.Errorf("%s: NodesFit %d, want %d (%s)", tc.limit, l.NodesFit, tc.wantFit, l.Detail)
			}
			if tc.wantWhere != "" && l.Where != tc.wantWhere {
				t.Errorf("%s: where %q, want %q", tc.limit, l.Where, tc.wantWhere)
			}
			if tc.first != (p.FirstToBreak == tc.limit) {
				t.Errorf("first to break %q (want %s first: %v); limits %s", p.FirstToBreak, tc.limit, tc.first, limitsText(p))
			}
			if p.Limits[0].Status == StatusBreaks && p.Limits[0].ID != p.FirstToBreak {
				t.Errorf("the first limit listed is %s, the first to break %s", p.Limits[0].ID, p.FirstToBreak)
			}
			if l.Status == StatusBreaks && l.BreaksAt != l.NodesFit+1 {
				t.Errorf("breaks at %d with %d fitting", l.BreaksAt, l.NodesFit)
			}
		})
	}
}

func limitsText(p *Plan) string {
	var parts []string
	for _, l := range p.Limits {
		parts = append(parts, l.ID+":"+l.Status)
	}
	return strings.Join(parts, ",")
}

// The fix named first is the one that moves the limit furthest; setting changes are tried by
// recomputing the plan.
func TestFixes(t *testing.T) {
	m5 := mustType(t, "m5.large")
	r, err := Run(Input{Groups: []Group{{Name: "ng", Type: m5, Add: 100, PodsPerNode: 10, Placements: placementsAB}},
		Subnets: twoSubnets(200, 200), EC2: EC2Buckets{Mutating: Bucket{Capacity: 1 << 20, Refill: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := r.Today.Limit(LimitSubnet)
	if l.Fix == nil || !strings.HasPrefix(l.Fix.Text, "subnet-a is 800 addresses short: add a subnet of at least /22 in us-east-1a; subnet-b is 800") || l.Fix.NodesFit != 100 {
		t.Fatalf("fix %+v", l.Fix)
	}
	// WARM_IP_TARGET=2 MINIMUM_IP_TARGET=8 holds 10+2 a node: 32 nodes. Prefix delegation holds
	// 2 prefixes (33 addresses) a node, worse, and is not offered.
	if len(l.Alternatives) != 1 || l.Alternatives[0].NodesFit != 32 || l.Alternatives[0].Set["WARM_IP_TARGET"] != "2" {
		t.Errorf("alternatives %+v", l.Alternatives)
	}

	// Pods per node with custom networking: the AMI's 29 against 20 addresses; the fix gives
	// the kubelet 20 (the OS unknown: every OS's text).
	r, err = Run(Input{Env: map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
		Groups: []Group{{Name: "ng", Type: m5, Add: 5, Kubelet: Kubelet{RegistryPullQPS: 0, Source: "test"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Today.FirstToBreak != LimitPods {
		t.Fatalf("first %s", r.Today.FirstToBreak)
	}
	l = r.Today.Limit(LimitPods)
	if l.Fix == nil || !strings.HasPrefix(l.Fix.Text, "give the kubelet max pods 20:") || l.Fix.NodesFit != -1 {
		t.Errorf("fix %+v", l.Fix)
	}
}

// --set and --prefix-delegation give a second plan beside today's; the verdict is the what-if's.
func TestWhatIf(t *testing.T) {
	in := Input{Env: map[string]string{"WARM_ENI_TARGET": "1"},
		Groups:  []Group{{Name: "ng", Type: mustType(t, "m5.large"), Add: 30, PodsPerNode: 10, Placements: placementsAB, Kubelet: Kubelet{Source: "test"}}},
		Subnets: twoSubnets(200, 200)}
	r, err := Run(in, map[string]string{"WARM_IP_TARGET": "2", "WARM_ENI_TARGET": ""})
	if err != nil {
		t.Fatal(err)
	}
	if r.Today.Fits || r.Today.FirstToBreak != LimitSubnet {
		t.Errorf("today: fits %v, first %s", r.Today.Fits, r.Today.FirstToBreak)
	}
	if r.WhatIf == nil || !r.WhatIf.Fits || !r.Fits {
		t.Fatalf("what-if does not fit: %+v", r.WhatIf)
	}
	if _, ok := r.WhatIf.Settings["WARM_ENI_TARGET"]; ok || r.WhatIf.Settings["WARM_IP_TARGET"] != "2" {
		t.Errorf("what-if settings %v", r.WhatIf.Settings)
	}
	if got := r.WhatIf.Limit(LimitSubnet).NodesFit; got != 32 {
		t.Errorf("what-if subnet fit %d", got)
	}
}

// A subnet's free /28 blocks: at most free/16; at least its blocks less the two holding AWS's
// reserved addresses and one per address in use.
func TestFreePrefixes(t *testing.T) {
	for _, tc := range []struct {
		cidr   string
		free   int
		lo, hi int
		ok     bool
	}{
		// A /24: 16 blocks, 14 without a reserved address; 251 free: nothing in use.
		{"10.0.0.0/24", 251, 14, 14, true},
		// 40 in use could sit in 40 blocks: none left for sure; 211/16 = 13 at most.
		{"10.0.0.0/24", 211, 0, 13, true},
		// A /20: 256 blocks, 254 usable; 100 in use: at least 154, at most 3991/16 = 249.
		{"10.0.0.0/20", 4091 - 100, 154, 249, true},
		// A /28 is one block, holding the reserved addresses.
		{"10.0.0.0/28", 11, 0, 0, true},
		{"10.0.0.0/29", 3, 0, 0, false},
		{"2600:1f14::/64", 100, 0, 0, false},
		{"", 100, 0, 0, false},
	} {
		lo, hi, ok := FreePrefixes(tc.cidr, tc.free)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("FreePrefixes(%s, %d) = %d, %d, %v; want %d, %d, %v", tc.cidr, tc.free, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// Failures before delays (issue 30): on m5.large with the EKS AMI's maxPods 29, each new node
// starts 27 image pulls against the kubelet's default registryBurst 10, so pulls are refused from
// the first node, while the subnets' 300 free addresses hold 10 nodes each and the 21st node's
// pods never get theirs. The pulls only wait (the kubelet retries them with back-off), so the
// first limit named is the subnet; each delay is listed with the seconds it adds at the plan's
// size. Without a failure, the first delay past its bound is named, and the plan does not fit.
func TestFailuresBeforeDelays(t *testing.T) {
	m5 := mustType(t, "m5.large")
	p, err := Compute(Input{Groups: []Group{{Name: "ng", Type: m5, Add: 40, Placements: placementsAB}}, Subnets: twoSubnets(300, 300)})
	if err != nil {
		t.Fatal(err)
	}
	if p.FirstToFail != LimitSubnet || p.FirstToBreak != LimitSubnet || p.Limits[0].ID != LimitSubnet || p.Limits[0].Kind != KindFailure || p.Limits[0].BreaksAt != 21 {
		t.Errorf("first to fail %q, to break %q, first listed %s (%s) at %d; want the subnet at node 21: %s", p.FirstToFail, p.FirstToBreak, p.Limits[0].ID, p.Limits[0].Kind, p.Limits[0].BreaksAt, limitsText(p))
	}
	if l := p.Limit(LimitPulls); l.Kind != KindDelay || l.Status != StatusBreaks || l.BreaksAt != 1 {
		t.Errorf("image pulls: %s %s at %d, want a delay from node 1", l.Kind, l.Status, l.BreaksAt)
	}
	// 27 pulls, burst 10 at 5/s: 10 at once, 10 after the 10 s back-off, the last 7 after 20 s
	// more. 40 nodes of 9 calls against 50 refilled at 5/s: (360 - 50) / 5 = 62 s.
	want := []Delay{{ID: LimitPulls, Seconds: 30}, {ID: LimitEC2, Seconds: 62}}
	if len(p.Delays) != len(want) {
		t.Fatalf("delays %+v, want %+v", p.Delays, want)
	}
	for i, d := range p.Delays {
		if d.ID != want[i].ID || d.Seconds != want[i].Seconds || d.Title != Title(d.ID) || d.Detail == "" {
			t.Errorf("delay %d: %+v, want %s of %gs", i, d, want[i].ID, want[i].Seconds)
		}
	}

	// Plenty of addresses: nothing fails, the pulls are the first (and only) limit past its bound.
	p, err = Compute(Input{Groups: []Group{{Name: "ng", Type: m5, Add: 40, Placements: placementsAB}}, Subnets: twoSubnets(1_000_000, 1_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Fits || p.FirstToFail != "" || p.FirstToBreak != LimitPulls {
		t.Errorf("fits %v, first to fail %q, first to break %q; want pulls past their bound and no failure", p.Fits, p.FirstToFail, p.FirstToBreak)
	}
}

// PullDelay follows the kubelet's pull bucket and its image back-off (10 s doubling to 300 s).
func TestPullDelay(t *testing.T) {
	for _, tc := range []struct {
		pulls, qps, burst int
		want              float64
	}{
		{10, 5, 10, 0},     // within the burst
		{27, 0, 10, 0},     // registryPullQPS 0: no limit
		{18, 5, 10, 10},    // the 8 over start after one back-off
		{27, 5, 10, 30},    // 10, 10 at 10 s, 7 at 30 s
		{100, 1, 10, 1510}, // 10 a round: back-offs 10, 20, 40, 80, 160, then 300 four times
		{5, 5, 0, 150},     // registryBurst 0 counted as 1: one a round, after 10, 20, 40 and 80 s
	} {
		if got := PullDelay(tc.pulls, tc.qps, tc.burst); got != tc.want {
			t.Errorf("PullDelay(%d, %d, %d) = %g, want %g", tc.pulls, tc.qps, tc.burst, got, tc.want)
		}
	}
}

// TestPullFixQPSDoesNotFollowPods: the pull fix's registryBurst is the pulls a new node starts
// at once, which grows with pods per node; its registryPullQPS is the one recommended value, so
// a plan of 27 pulls and one of 108 (a prefix-delegation what-if of the same cluster) both say
// 50 (before, the QPS was max(pulls, 50): 50 today and 108 in the what-if).
func TestPullFixQPSDoesNotFollowPods(t *testing.T) {
	big := twoSubnets(1_000_000, 1_000_000)
	huge := EC2Buckets{Mutating: Bucket{Capacity: 1_000_000, Refill: 1000}, Source: "test"}
	for _, pulls := range []int{27, 108} {
		r, err := Run(Input{Groups: []Group{{Name: "ng", Type: mustType(t, "m5.large"), Add: 3, PullsPerNode: pulls, Placements: placementsAB}}, Subnets: big, EC2: huge}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := r.Today.Limit(LimitPulls)
		want := fmt.Sprintf("give the kubelets registryBurst %d (the %d pulls a new node starts at once) and registryPullQPS 50 ", pulls, pulls)
		if l.Fix == nil || !strings.HasPrefix(l.Fix.Text, want) {
			t.Errorf("%d pulls: fix %+v, want %q", pulls, l.Fix, want)
		}
	}
}
