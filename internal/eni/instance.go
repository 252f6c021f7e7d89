// Package eni computes how many pods an EC2 instance can run with the Amazon VPC CNI, with the
// formulas of the EKS max-pods calculator (the EKS AMI's max-pods-calculator.sh), and parses the
// VPC CNI's settings (the aws-node DaemonSet environment) that change the answer.
//
// Instance data (ENIs on the default network card, IPv4 addresses per ENI, hypervisor, bare metal)
// comes from the limits table that the VPC resource controller maintains and Karpenter uses
// (github.com/aws/amazon-vpc-resource-controller-k8s/pkg/aws/vpc), never from a copy kept here. That
// table has no vCPU counts, which the calculator needs only for its 110/250 ceiling: callers pass the
// real count when they have it (a Node's cpu capacity, a bundle's /proc/stat) and otherwise get an
// estimate from the instance size name that is marked as such (see EstimateVCPUs).
package eni

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/amazon-vpc-resource-controller-k8s/pkg/aws/vpc"
)

// DataSource names the module and version the instance table comes from, for output and docs.
// Keep it in step with go.mod (a test checks it against the build info).
const DataSource = "github.com/aws/amazon-vpc-resource-controller-k8s/pkg/aws/vpc@v1.8.1"

// InstanceType is what the max-pods formulas need to know about one EC2 instance type.
type InstanceType struct {
	Name string `json:"name"`
	// ENIs is the maximum number of network interfaces on the default network card: the VPC CNI
	// only places pod addresses there, so this is the number the calculator uses.
	ENIs int `json:"enis"`
	// TotalENIs is the maximum number of network interfaces over all network cards.
	TotalENIs int `json:"totalENIs"`
	// IPv4PerENI is the number of private IPv4 addresses per interface (primary included).
	IPv4PerENI int `json:"ipv4PerENI"`
	// Hypervisor is "nitro", "xen" or "" (bare metal types report none).
	Hypervisor string `json:"hypervisor"`
	BareMetal  bool   `json:"bareMetal"`
	// TrunkingCompatible: security groups for pods (ENABLE_POD_ENI) attach a trunk ENI, which then
	// carries no pod addresses of its own.
	TrunkingCompatible bool `json:"trunkingCompatible"`
	// NetworkCards is the number of network cards; DefaultNetworkCard the index of the default one.
	NetworkCards       int `json:"networkCards"`
	DefaultNetworkCard int `json:"defaultNetworkCard"`
}

// Nitro reports whether the instance runs on the Nitro hypervisor, the calculator's condition for
// prefix delegation.
func (t InstanceType) Nitro() bool { return t.Hypervisor == "nitro" }

// ErrUnknownInstanceType is returned (wrapped) by Lookup for a type missing from the table.
var ErrUnknownInstanceType = errors.New("unknown instance type")

// Lookup returns the instance data for name (for example "m5.large"). An unknown or malformed name
// is an error that says so and suggests near names from the same family.
func Lookup(name string) (InstanceType, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return InstanceType{}, fmt.Errorf("%w: empty name", ErrUnknownInstanceType)
	}
	l, ok := vpc.Limits[name]
	if !ok || l == nil {
		msg := fmt.Sprintf("%v %q: not in the instance limits table (%s)", ErrUnknownInstanceType, name, DataSource)
		if s := suggest(name); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, ", ") + "?"
		}
		return InstanceType{}, &unknownTypeError{msg: msg}
	}
	return fromLimits(name, l)
}

type unknownTypeError struct{ msg string }

func (e *unknownTypeError) Error() string { return e.msg }
func (e *unknownTypeError) Unwrap() error { return ErrUnknownInstanceType }

func fromLimits(name string, l *vpc.VPCLimits) (InstanceType, error) {
	t := InstanceType{
		Name:               name,
		TotalENIs:          l.Interface,
		IPv4PerENI:         l.IPv4PerInterface,
		Hypervisor:         l.Hypervisor,
		BareMetal:          l.IsBareMetal,
		TrunkingCompatible: l.IsTrunkingCompatible,
		NetworkCards:       len(l.NetworkCards),
		DefaultNetworkCard: l.DefaultNetworkCardIndex,
	}
	// The calculator reads NetworkCards[DefaultNetworkCardIndex]; match on the card's own index so a
	// table listed out of order still gives the default card.
	found := false
	for _, c := range l.NetworkCards {
		if int(c.NetworkCardIndex) == l.DefaultNetworkCardIndex {
			t.ENIs = int(c.MaximumNetworkInterfaces)
			found = true
			break
		}
	}
	if !found {
		if len(l.NetworkCards) > 0 {
			return InstanceType{}, fmt.Errorf("instance type %q: default network card %d missing from the limits table", name, l.DefaultNetworkCardIndex)
		}
		// Entries without card data describe single-card types.
		t.ENIs = l.Interface
		t.NetworkCards = 1
	}
	if t.ENIs <= 0 || t.IPv4PerENI <= 0 {
		return InstanceType{}, fmt.Errorf("instance type %q: limits table has %d ENIs and %d IPv4 addresses per ENI", name, t.ENIs, t.IPv4PerENI)
	}
	return t, nil
}

// Types returns every instance type name in the table, sorted.
func Types() []string {
	out := make([]string, 0, len(vpc.Limits))
	for k := range vpc.Limits {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// suggest returns up to five known types closest to a mistyped name: same family (the part before
// the dot) or same start, ranked by the length of the common prefix ("m5.larg" -> "m5.large").
func suggest(name string) []string {
	family, _, hasDot := strings.Cut(name, ".")
	type cand struct {
		name   string
		common int
	}
	var cands []cand
	for _, t := range Types() {
		f, _, _ := strings.Cut(t, ".")
		if (hasDot && f == family) || (!hasDot && strings.HasPrefix(t, name)) {
			n := 0
			for n < len(t) && n < len(name) && t[n] == name[n] {
				n++
			}
			cands = append(cands, cand{t, n})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].common > cands[j].common })
	var out []string
	for i := 0; i < len(cands) && i < 5; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
