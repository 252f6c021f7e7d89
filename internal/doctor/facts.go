package doctor

import (
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Fact names one part of Facts that the gather phase reads with its own request(s), so that it
// can be missing on its own (a forbidden LIST) and checks can say which ones they need.
type Fact string

// The facts. Nodes and the API server version are always read (without them the run fails).
const (
	FactNodes        Fact = "nodes"
	FactAWSNode      Fact = "aws-node"
	FactConfigz      Fact = "configz"
	FactLeases       Fact = "leases"
	FactMetrics      Fact = "metrics"
	FactPods         Fact = "pods"
	FactEvents       Fact = "events"
	FactCSRs         Fact = "csrs"
	FactENIConfigs   Fact = "eniconfigs"
	FactCSINodes     Fact = "csinodes"
	FactCNINodes     Fact = "cninodes"
	FactEC2Types     Fact = "ec2-instance-types"
	FactEC2Instances Fact = "ec2-instances"
	FactEC2Subnets   Fact = "ec2-subnets"
	// The image pull and add-on facts (gather_addons.go).
	FactAddons          Fact = "addons"
	FactAddonPods       Fact = "addon-pods"
	FactPullEvents      Fact = "pull-events"
	FactLeaseCollectors Fact = "lease-collectors"
	// FactLaunchTemplates: the launch template versions in use (launchtemplates.go).
	FactLaunchTemplates Fact = "launch-templates"
	FactCNIMetrics      Fact = "cni-metrics"
	// FactKarpenter: Karpenter's Deployments and settings ConfigMap (what the reservedENIs
	// setting is read from).
	FactKarpenter Fact = "karpenter"
)

// Missing is why a fact could not be gathered: the resource asked for and the reason, usually
// the verb and resource the caller lacks ("needs list on pods").
type Missing struct {
	Resource, Reason string
}

// Facts is everything a doctor run read from the cluster (and EC2), filled once by Gather and
// read by every check. Checks never write to it. It is data only: no clients, no callbacks.
type Facts struct {
	// Settings are the thresholds and overrides the checks judge by, from the run's Options.
	Settings Settings
	// Now is the time the checks compare ages with.
	Now time.Time
	// Server is the API server's version (GitVersion).
	Server string
	// Nodes sorted by name.
	Nodes []corev1.Node
	// AWSNode is the VPC CNI DaemonSet as far as the checks read it.
	AWSNode AWSNodeFacts
	// Karpenter is its reservedENIs setting, when found.
	Karpenter KarpenterFacts
	// Configz holds each node's kubelet configuration, or why it could not be read, by node name
	// (Ready nodes are asked; the others carry "node not Ready").
	Configz map[string]clusterread.ConfigzResult
	// Leases are the node leases (kube-node-lease).
	Leases []coordinationv1.Lease
	// APF are the API server's apiserver_flowcontrol_* samples from /metrics.
	APF []clusterread.Sample
	// Pods is what the pod and sandbox event lists left: stuck pods and per-node address use.
	Pods PodFacts
	// CSRs are the kubelet-serving certificate signing requests that are neither settled nor
	// younger than CSRPendingAfter.
	CSRs []ServingCSR
	// ENIConfigs are the custom networking objects (Served false: the CRD is not installed).
	ENIConfigs ENIConfigFacts
	// CSINodes and CNINodes are the node-scoped objects (names and owners only).
	CSINodes []NodeScoped
	CNINodes NodeScopedFacts
	// CNI holds each node's aws-node pod and its ipamd figures (gather_cnimetrics.go).
	CNI CNIFacts
	// EC2 is what EC2 says (doctor --aws only).
	EC2 EC2Facts
	// Addons are aws-node, kube-proxy and CoreDNS with their restarting pods; PullQPS the image
	// pulls the kubelets' limiters refused, per node; LeaseCollectors the Karpenter and
	// nodekeeper controllers found (gather_addons.go).
	Addons          []AddonFacts
	PullQPS         map[string]*PullQPSNode
	LeaseCollectors LeaseCollectorFacts
	// LaunchTemplates are the launch template versions the Nodes were launched from or their
	// groups launch from now, sorted by template and version (doctor --aws only).
	LaunchTemplates []TemplateVersion
	// Stats are numbers about the reads (requests, pages, objects) for the report.
	Stats map[string]int64
	// Missing lists the facts that could not be gathered, with why.
	Missing map[Fact]Missing
}

// Settings are the values of Options the checks judge the facts by (with defaults applied),
// copied so that Facts holds plain data.
type Settings struct {
	// CustomNetworking and PrefixDelegation override the aws-node environment (nil: use it);
	// CNIVersion the version read from its image; ReservedENIs are ENIs kept from pods besides
	// custom networking's and the trunk ENI.
	CustomNetworking, PrefixDelegation *bool
	CNIVersion                         string
	ReservedENIs                       int
	// MinCNIVersion is the VPC CNI version below which a warning is given (zero: default).
	MinCNIVersion eni.Version
	// Lease tunes the lease classification; CSRPendingAfter is how long a kubelet-serving CSR
	// may stay without a certificate.
	Lease           lease.Options
	CSRPendingAfter time.Duration
	// SkipCNIMetrics: the aws-node metrics were not read, and are not judged.
	SkipCNIMetrics bool
	// EC2 is the EC2 section's settings (nil without --aws).
	EC2 *EC2Options
}

// Settings are the Settings of o, as Facts carries them (the checks judge by them).
func (o Options) Settings() Settings {
	return Settings{CustomNetworking: o.CustomNetworking, PrefixDelegation: o.PrefixDelegation, CNIVersion: o.CNIVersion,
		ReservedENIs: o.ReservedENIs, MinCNIVersion: o.MinCNIVersion, Lease: o.Lease, CSRPendingAfter: o.CSRPendingAfter,
		SkipCNIMetrics: o.SkipCNIMetrics, EC2: o.EC2}
}

// Has reports whether a fact was gathered.
func (f *Facts) Has(fact Fact) bool {
	_, missing := f.Missing[fact]
	return !missing
}

func (f *Facts) miss(fact Fact, resource, reason string) {
	if f.Missing == nil {
		f.Missing = map[Fact]Missing{}
	}
	f.Missing[fact] = Missing{Resource: resource, Reason: reason}
}

func (f *Facts) stat(name string, v int64) {
	if f.Stats == nil {
		f.Stats = map[string]int64{}
	}
	f.Stats[name] += v
}

// AWSNodeFacts is the aws-node DaemonSet as the checks read it.
type AWSNodeFacts struct {
	// Resource names it ("daemonset/kube-system/aws-node").
	Resource string
	// Found: the DaemonSet exists; Container: it has the aws-node container.
	Found, Container bool
	// Selector is the DaemonSet's pod selector ("k8s-app=aws-node"), how its pods are found.
	Selector string
	// Env holds the container's literal environment; Unread the variables set from a ConfigMap
	// or Secret.
	Env    map[string]string
	Unread []string
	// Version is read from the container image (nil: not a versioned VPC CNI image).
	Version *eni.Version
}

// KarpenterFacts is Karpenter's reservedENIs when found (Source says where).
type KarpenterFacts struct {
	Found        bool
	ReservedENIs int
	Source       string
}

// PodFacts is what the pod and event lists left.
type PodFacts struct {
	// VPCPods counts pods holding VPC addresses per node.
	VPCPods map[string]int
	// Stuck are the pods stuck in ContainerCreating, by namespace/name, with the cause of their
	// newest sandbox failure event.
	Stuck map[string]*StuckPod
}

// ServingCSR is one kubelet-serving certificate signing request that is not settled.
type ServingCSR struct {
	Name     string
	Username string
	Groups   []string
	Created  time.Time
	// Approved but never signed.
	Approved bool
}

// ENIConfig is the part of an ENIConfig the checks read.
type ENIConfig struct {
	Name, Subnet   string
	SecurityGroups int
}

// ENIConfigFacts are the ENIConfigs (Served false: the CRD is not installed).
type ENIConfigFacts struct {
	Served bool
	Items  []ENIConfig
}

// NodeScoped is an object named after its Node (a CSINode, a CNINode).
type NodeScoped struct {
	Name   string
	Owners []metav1.OwnerReference
}

// NodeScopedFacts are objects of a CRD that may not be installed.
type NodeScopedFacts struct {
	Served bool
	Items  []NodeScoped
}

// EC2Facts is what EC2 said about the cluster's instances and subnets (doctor --aws).
type EC2Facts struct {
	// Types is the instance table completed by EC2 for the types it does not know (nil: the
	// built-in table).
	Types *eni.Catalog
	// Running are the cluster's running instances (found by tag).
	Running []ec2types.Instance
	// ByID are the instances the Nodes' providerIDs name, in any state.
	ByID    map[string]ec2types.Instance
	Subnets []ec2types.Subnet
	// Boot holds the root volumes of recently launched Nodes and their metrics (bootvolumes.go).
	Boot BootFacts
}
