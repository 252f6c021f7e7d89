// Package scenario reads a plan scenario file: several node groups to grow in one scale-up, with
// optional subnets' free addresses, kubelet pull limits, EC2 token buckets and aws-node what-if
// settings (docs/schemas/planscenario.schema.json).
package scenario

import (
	"errors"
	"fmt"
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

// Parse reads a scenario (YAML or JSON); unknown fields are errors, so a misspelt key is not
// silently ignored.
func Parse(data []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if s.APIVersion != typemeta.APIVersion || s.Kind != Kind {
		return nil, fmt.Errorf("scenario: want apiVersion %s and kind %s, got %q and %q", typemeta.APIVersion, Kind, s.APIVersion, s.Kind)
	}
	if len(s.NodeGroups) == 0 {
		return nil, errors.New("scenario: no nodeGroups")
	}
	for i, g := range s.NodeGroups {
		if g.Add <= 0 {
			return nil, fmt.Errorf("scenario: nodeGroups[%d]: add must be at least 1", i)
		}
		if g.Name == "" && g.Nodegroup == "" {
			return nil, fmt.Errorf("scenario: nodeGroups[%d]: give a name or a nodegroup", i)
		}
	}
	if s.MaxAddressWait != "" {
		if _, err := time.ParseDuration(s.MaxAddressWait); err != nil {
			return nil, fmt.Errorf("scenario: maxAddressWait: %w", err)
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
