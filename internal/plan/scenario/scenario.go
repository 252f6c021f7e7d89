// Package scenario reads a plan scenario file: several node groups to grow in one scale-up, with
// optional subnets' free addresses, kubelet pull limits, EC2 token buckets and aws-node what-if
// settings (docs/schemas/planscenario.schema.json).
package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// Kind is the scenario file's kind.
const Kind = "PlanScenario"

// Scenario is the file.
type Scenario struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// NodeGroups are grown in this order.
	NodeGroups []NodeGroup `json:"nodeGroups"`
	// Subnets are free addresses known without --aws (EC2's figures win over none).
	Subnets []plan.Subnet `json:"subnets,omitempty"`
	// Set are aws-node settings to try beside today's (like --set).
	Set map[string]string `json:"set,omitempty"`
	// EC2 overrides the documented token bucket of mutating actions.
	EC2 *plan.Bucket `json:"ec2Mutating,omitempty"`
	// MaxAddressWait is a Go duration ("5m").
	MaxAddressWait string `json:"maxAddressWait,omitempty"`
}

// NodeGroup is one group to grow.
type NodeGroup struct {
	Name         string        `json:"name,omitempty"`
	Nodegroup    string        `json:"nodegroup,omitempty"`
	InstanceType string        `json:"instanceType,omitempty"`
	Add          int           `json:"add"`
	PodsPerNode  int           `json:"podsPerNode,omitempty"`
	MaxPods      int           `json:"maxPods,omitempty"`
	PullsPerNode int           `json:"pullsPerNode,omitempty"`
	ReservedENIs int           `json:"reservedENIs,omitempty"`
	Subnets      []string      `json:"subnets,omitempty"`
	Zones        []string      `json:"zones,omitempty"`
	ENIConfig    string        `json:"eniConfig,omitempty"`
	Kubelet      *plan.Kubelet `json:"kubelet,omitempty"`
}

// The bounds of a scenario, checked before it is decoded (the size) and before any API call (the
// counts): a scenario of a few node groups is a few KiB, and the decoder's time and memory grow
// with what it is given (a 10 MB file of 200k node groups took 13 s and 405 MB).
const (
	// MaxFileBytes bounds the file.
	MaxFileBytes = 256 << 10
	// MaxNodeGroups bounds nodeGroups.
	MaxNodeGroups = 256
	// MaxSubnets bounds subnets.
	MaxSubnets = 1024
)

// ReadFile reads and parses the scenario at path, at most MaxFileBytes of it, whatever it is (a
// FIFO or a process substitution as well as a file). An error opening or reading it is an
// *fs.PathError; any other error is the scenario's own (too large, malformed, a field refused)
// and names path.
func ReadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("scenario %s: larger than %d KiB, the most a scenario may be (it lists node groups, at most %d)", path, MaxFileBytes>>10, MaxNodeGroups)
	}
	s, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a scenario (YAML or JSON); unknown fields are errors, so a misspelt key is not
// silently ignored, and so is a figure the equivalent flag refuses (naming the field).
func Parse(data []byte) (*Scenario, error) {
	s, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return s, nil
}

func parse(data []byte) (*Scenario, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d KiB, the most a scenario may be", MaxFileBytes>>10)
	}
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, err
	}
	if s.APIVersion != typemeta.APIVersion || s.Kind != Kind {
		return nil, fmt.Errorf("want apiVersion %s and kind %s, got %q and %q", typemeta.APIVersion, Kind, s.APIVersion, s.Kind)
	}
	if len(s.NodeGroups) == 0 {
		return nil, errors.New("no nodeGroups")
	}
	if len(s.NodeGroups) > MaxNodeGroups {
		return nil, fmt.Errorf("%d nodeGroups, more than the %d a scenario may hold", len(s.NodeGroups), MaxNodeGroups)
	}
	if len(s.Subnets) > MaxSubnets {
		return nil, fmt.Errorf("%d subnets, more than the %d a scenario may hold", len(s.Subnets), MaxSubnets)
	}
	for i, g := range s.NodeGroups {
		at := fmt.Sprintf("nodeGroups[%d]", i)
		if g.Add <= 0 {
			return nil, fmt.Errorf("%s: add must be at least 1", at)
		}
		if g.Name == "" && g.Nodegroup == "" {
			return nil, fmt.Errorf("%s: give a name or a nodegroup", at)
		}
		for field, v := range map[string]int{"podsPerNode": g.PodsPerNode, "maxPods": g.MaxPods, "pullsPerNode": g.PullsPerNode, "reservedENIs": g.ReservedENIs} {
			if v < 0 {
				return nil, fmt.Errorf("%s.%s must not be negative (it is %d)", at, field, v)
			}
		}
		if k := g.Kubelet; k != nil && (k.RegistryPullQPS < 0 || k.RegistryBurst < 0) {
			return nil, fmt.Errorf("%s.kubelet: registryPullQPS and registryBurst must not be negative", at)
		}
	}
	for i, sn := range s.Subnets {
		if sn.Free < 0 {
			return nil, fmt.Errorf("subnets[%d].free must not be negative (it is %d)", i, sn.Free)
		}
	}
	if b := s.EC2; b != nil {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("ec2Mutating: %w", err)
		}
	}
	if s.MaxAddressWait != "" {
		d, err := time.ParseDuration(s.MaxAddressWait)
		if err != nil {
			return nil, fmt.Errorf("maxAddressWait: %w", err)
		}
		if d <= 0 {
			return nil, fmt.Errorf("maxAddressWait %q must be positive", s.MaxAddressWait)
		}
	}
	return &s, nil
}

// Requests are the scenario's node groups as gather requests.
func (s *Scenario) Requests() []gather.Request {
	var out []gather.Request
	for _, g := range s.NodeGroups {
		var k *plan.Kubelet
		if g.Kubelet != nil {
			kc := *g.Kubelet
			if kc.Source == "" {
				kc.Source = "the scenario"
			}
			k = &kc
		}
		out = append(out, gather.Request{Name: g.Name, Nodegroup: g.Nodegroup, InstanceType: g.InstanceType, Add: g.Add,
			PodsPerNode: g.PodsPerNode, MaxPods: g.MaxPods, PullsPerNode: g.PullsPerNode, ReservedENIs: g.ReservedENIs,
			Subnets: g.Subnets, Zones: g.Zones, ENIConfig: g.ENIConfig, Kubelet: k, SubnetsFree: s.Subnets})
	}
	return out
}

// Wait is MaxAddressWait parsed (0 when unset).
func (s *Scenario) Wait() time.Duration {
	d, _ := time.ParseDuration(s.MaxAddressWait)
	return d
}
