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
	// Source says where the data came from: SourceTable (the built-in table, DataSource) or
	// SourceEC2 (DescribeInstanceTypes, for a type the table does not know).
	Source string `json:"source"`
	// VCPUs is the real vCPU count when EC2 gave it; 0 when the data came from the table only,
	// which has none.
	VCPUs int `json:"vcpus,omitempty"`
}

// The values of InstanceType.Source.
const (
	SourceTable = "built-in table"
	SourceEC2   = "EC2 DescribeInstanceTypes"
)

// VCPUSourceEC2 is the VCPUSource of a vCPU count EC2 gave (DescribeInstanceTypes).
const VCPUSourceEC2 = "EC2 DescribeInstanceTypes"

// Nitro reports whether the instance runs on the Nitro hypervisor, the calculator's condition for
// prefix delegation.
func (t InstanceType) Nitro() bool { return t.Hypervisor == "nitro" }

// ErrUnknownInstanceType is returned (wrapped) by Lookup for a type missing from the table.
var ErrUnknownInstanceType = errors.New("unknown instance type")

// Lookup returns the built-in table's data for name (for example "m5.large"; case and
// surrounding space do not matter). An unknown or malformed name is an error wrapping
// ErrUnknownInstanceType that suggests the closest known names ("did you mean m5.large?").
func Lookup(name string) (InstanceType, error) {
	return (*Catalog)(nil).Lookup(name)
}

// Normalize is the form instance type names are looked up in: EC2's names are lower case.
func Normalize(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// Known reports whether the built-in table has name.
func Known(name string) bool {
	l, ok := vpc.Limits[Normalize(name)]
	return ok && l != nil
}

// Catalog is the built-in table plus instance types learnt from EC2 (DescribeInstanceTypes)
// for names the table does not know, and the real vCPU counts EC2 gave for names it does. The
// nil *Catalog is the built-in table alone. A Catalog is filled before use and then only read.
type Catalog struct {
	fromEC2 map[string]InstanceType
}

// NewCatalog returns a catalog holding the built-in table and the given EC2 data.
func NewCatalog(fromEC2 ...InstanceType) *Catalog {
	c := &Catalog{fromEC2: map[string]InstanceType{}}
	for _, t := range fromEC2 {
		t.Name = Normalize(t.Name)
		c.fromEC2[t.Name] = t
	}
	return c
}

// Lookup returns the data for name: the built-in table's (with EC2's vCPU count when the
// catalog has it), else EC2's, else an error wrapping ErrUnknownInstanceType with suggestions.
func (c *Catalog) Lookup(name string) (InstanceType, error) {
	norm := Normalize(name)
	if norm == "" {
		return InstanceType{}, fmt.Errorf("%w: empty name", ErrUnknownInstanceType)
	}
	var learnt InstanceType
	var haveEC2 bool
	if c != nil {
		learnt, haveEC2 = c.fromEC2[norm]
	}
	if l, ok := vpc.Limits[norm]; ok && l != nil {
		t, err := fromLimits(norm, l)
		if err == nil && haveEC2 {
			t.VCPUs = learnt.VCPUs
		}
		return t, err
	}
	if haveEC2 {
		return learnt, nil
	}
	msg := fmt.Sprintf("%v %q: not in the instance limits table (%s)", ErrUnknownInstanceType, strings.TrimSpace(name), DataSource)
	if s := suggest(norm); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, ", ") + "?"
	}
	return InstanceType{}, &unknownTypeError{msg: msg}
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
		Source:             SourceTable,
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

// suggest returns the known types closest to a mistyped name. A name within two edits of known
// names gets those alone ("m5.larg" -> m5.large); otherwise up to five of the same family (the
// part before the dot) or, without a dot, of the same start, ranked by common prefix.
func suggest(name string) []string {
	types := Types()
	const maxEdits = 2
	best, bestDist := []string(nil), maxEdits
	for _, t := range types {
		// The limit is one past the best distance so far, so that a tie is measured exactly.
		switch d := editDistance(name, t, bestDist+1); {
		case d < bestDist || (d == bestDist && best == nil):
			best, bestDist = []string{t}, d
		case d == bestDist:
			best = append(best, t)
		}
	}
	if len(best) > 0 {
		return best[:min(len(best), 3)]
	}
	family, _, hasDot := strings.Cut(name, ".")
	type cand struct {
		name   string
		common int
	}
	var cands []cand
	for _, t := range types {
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

// editDistance is the Levenshtein distance of a and b, or limit when it is at least limit
// (the table has about a thousand names: stopping early keeps suggestions cheap).
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
