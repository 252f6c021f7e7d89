// Package plan answers "what happens if I add these nodes?" before a scale-up: for each limit a
// scale-up of EKS nodes runs into (subnet addresses under the VPC CNI's warm pool, pods per node,
// EC2 API throttling, image pulls, the API server's priority level) it computes the node count at
// which the limit is reached, names the first to break and the fix that moves it furthest.
//
// Everything here is a pure function of Input; gather reads a live cluster (and AWS) into one,
// and a scenario file gives one offline.
package plan

import (
	"fmt"
	"math"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Input is everything a plan is computed from.
type Input struct {
	// Env is the aws-node container's environment (the VPC CNI settings) in effect today.
	Env map[string]string
	// Groups are the node groups that grow, in the order the scale-up adds them.
	Groups []Group
	// Subnets are the subnets whose free addresses are known, by ID.
	Subnets map[string]Subnet
	// EC2 are the token buckets of the EC2 API (DefaultEC2Buckets unless overridden).
	EC2 EC2Buckets
	// MaxAddressWait is how long the new nodes may wait for their addresses while EC2 throttles
	// ipamd's calls before the EC2 limit counts as reached (DefaultMaxAddressWait).
	MaxAddressWait time.Duration
	// APF is the API server's priority level that serves kubelets' leases and node status, when
	// it could be read; nil leaves that limit unknown.
	APF *APF
	// ExistingNodes are the cluster's nodes before the scale-up (their kubelets already load the
	// priority level).
	ExistingNodes int
	// Notes say what could not be read and what was assumed instead.
	Notes []string
}

// Group is one node group that grows.
type Group struct {
	Name string
	// Type is the instance type's data (eni catalog).
	Type eni.InstanceType
	// Add is how many nodes the plan adds to the group.
	Add int
	// PodsPerNode is how many pods each new node runs (host-network pods included); 0 = MaxPods.
	PodsPerNode int
	// MaxPods is the kubelet's maxPods on the new nodes; 0 = what the EKS AMI's bootstrap or
	// nodeadm compute from the instance type (see DefaultMaxPods). MaxPodsSource says where a
	// given value came from.
	MaxPods       int
	MaxPodsSource string
	// ReservedENIs are ENIs kept from pods besides custom networking's (Karpenter reservedENIs).
	ReservedENIs int
	// Placements are where the new nodes go, used in turn (an Auto Scaling group balancing its
	// zones). A node launches wherever its turn is as long as its subnet has an address for the
	// node itself: a subnet short of pod addresses still gets nodes, whose pods then wait.
	Placements []Placement
	// PullsPerNode are the image pulls each new node starts with; 0 = one per pod address.
	PullsPerNode int
	// Kubelet are the new kubelets' pull limits.
	Kubelet Kubelet
	// OS and Provisioner choose the text of a max-pods fix.
	OS          rules.NodeOS
	Provisioner rules.Provisioner
}

// Placement is where one new node lands: the subnet of its primary ENI and, with custom
// networking, the ENIConfig (and its subnet) that its pod ENIs use.
type Placement struct {
	Zone       string `json:"zone,omitempty"`
	NodeSubnet string `json:"nodeSubnet,omitempty"`
	ENIConfig  string `json:"eniConfig,omitempty"`
	PodSubnet  string `json:"podSubnet,omitempty"`
}

// Subnet is a subnet's free addresses (DescribeSubnets' AvailableIpAddressCount).
type Subnet struct {
	ID   string `json:"id"`
	Zone string `json:"zone,omitempty"`
	CIDR string `json:"cidr,omitempty"`
	Free int    `json:"free"`
}

// Kubelet are the kubelet settings that limit image pulls. Source says where they came from.
type Kubelet struct {
	RegistryPullQPS int    `json:"registryPullQPS"`
	RegistryBurst   int    `json:"registryBurst"`
	Source          string `json:"source"`
}

// DefaultKubelet are the kubelet's defaults (KubeletConfiguration v1beta1).
func DefaultKubelet() Kubelet {
	return Kubelet{RegistryPullQPS: rules.DefaultRegistryPullQPS, RegistryBurst: rules.DefaultRegistryBurst, Source: "kubelet defaults"}
}

// Bucket is one EC2 API token bucket: Capacity tokens, refilled at Refill per second.
type Bucket struct {
	Capacity int     `json:"capacity"`
	Refill   float64 `json:"refillPerSecond"`
}

// Validate refuses a bucket that holds no token or refills at a rate that is not a finite
// non-negative number (the simulation of the calls would never end or mean nothing).
func (b Bucket) Validate() error {
	if b.Capacity < 1 {
		return fmt.Errorf("capacity must be at least 1 (it is %d)", b.Capacity)
	}
	if math.IsNaN(b.Refill) || math.IsInf(b.Refill, 0) || b.Refill < 0 {
		return fmt.Errorf("refillPerSecond must be a finite number, at least 0 (it is %v)", b.Refill)
	}
	return nil
}

// EC2Buckets are the token buckets the calls of ipamd draw from.
type EC2Buckets struct {
	// Mutating is the bucket of CreateNetworkInterface, AttachNetworkInterface,
	// ModifyNetworkInterfaceAttribute and AssignPrivateIpAddresses.
	Mutating Bucket `json:"mutating"`
	// Source says whether these are AWS's documented defaults or given.
	Source string `json:"source"`
}

// DefaultEC2Buckets are the documented default request token buckets of the EC2 API for
// mutating actions ("Request throttling for the Amazon EC2 API", Amazon EC2 API Reference,
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/throttling.html: bucket maximum
// capacity 50 and refill rate 5 per second for mutating actions; AWS's own VPC resource
// controller states the same defaults, "mutating APIs refill at 5/sec with bucket max 50,
// non-mutating has 100/20", in aws/amazon-vpc-resource-controller-k8s pull request 675, which
// sized its EC2 client's rate limit to stay within them). They are per account and
// Region, shared by every caller, and AWS can set other values for an account (they are raised
// on request), so they can be overridden.
func DefaultEC2Buckets() EC2Buckets {
	return EC2Buckets{Mutating: Bucket{Capacity: 50, Refill: 5}, Source: "documented defaults (Request throttling for the Amazon EC2 API); an account's can differ"}
}

// DefaultMaxAddressWait is how long new nodes may wait for every address before the EC2 limit
// counts as reached: the kubelet retries a pod's sandbox while ipamd waits for EC2, and five
// minutes of ContainerCreating is what a scale-up notices.
const DefaultMaxAddressWait = 5 * time.Minute

// APF is the priority level that serves the kubelets' Lease renewals and Node status updates
// (the suggested FlowSchema system-node-high sends them to node-high).
type APF struct {
	PriorityLevel string `json:"priorityLevel"`
	// Seats is the priority level's nominal concurrency limit (apiserver_flowcontrol_nominal_limit_seats).
	Seats int `json:"seats"`
	// Source says where Seats came from.
	Source string `json:"source"`
}

// DefaultMaxPods is the maxPods the EKS AMI's bootstrap (max-pods-calculator.sh) and nodeadm
// set from the instance type: prefix delegation counts when the CNI uses it, custom networking
// never does (both compute from the type alone).
func DefaultMaxPods(t eni.InstanceType, s eni.Settings) (int, error) {
	r, err := eni.Calculate(t, eni.Options{PrefixDelegation: s.PrefixDelegation, MaxENI: s.EffectiveMaxENI()})
	if err != nil && r.MaxAllowed > 0 { // vCPUs unknown: the ceiling's estimate from the size name
		v, _ := eni.EstimateVCPUs(t.Name)
		r, err = eni.Calculate(t, eni.Options{PrefixDelegation: s.PrefixDelegation, MaxENI: s.EffectiveMaxENI(), VCPUs: v})
	}
	return r.MaxPods, err
}
