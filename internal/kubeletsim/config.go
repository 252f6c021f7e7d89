package kubeletsim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Mode selects which kubelet generation's node-lease behaviour a simulated kubelet reproduces.
type Mode string

const (
	// Modern is a 1.29+ kubelet: it heartbeats through the upstream lease controller and never
	// writes a lease it could not give an ownerReference, so a kubelet whose Node was deleted
	// only GETs its lease and Node (both 404) every renew interval.
	Modern Mode = "modern"
	// Legacy is a pre-1.29 kubelet (kubernetes issue 109777, fixed by PR 119661): when it cannot
	// GET its Node it ignores that error and PUTs a lease without ownerReference, which the API
	// server creates (leases allow create-on-update) and nobody ever garbage-collects.
	Legacy Mode = "legacy"
)

// NodeLeaseNamespace is where kubelets keep their heartbeat leases (client-go's own constant).
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// Defaults of the real kubelet (KubeletConfiguration) that the simulator follows.
const (
	DefaultLeaseDurationSeconds      = 40
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	DefaultKubeletPort               = 10250
	DefaultInstanceType              = "m5.large"
	DefaultNodeGroup                 = "ng-default"
	// DefaultImages is the kubelet's nodeStatusMaxImages: it reports at most 50 images.
	DefaultImages = 50

	// renewIntervalFraction is the kubelet's nodeLeaseRenewIntervalFraction: it renews its lease
	// every quarter of the lease duration (40 s → 10 s).
	renewIntervalFraction = 0.25
)

// Kubelet versions as EKS reports them; the user agent is derived from them.
const (
	ModernKubeletVersion = "v1.29.0-eks-5e0fdde"
	LegacyKubeletVersion = "v1.28.5-eks-5e0fdde"
)

// Config describes one simulated kubelet. Only Name is required; every other field defaults
// to what a kubelet on an EKS managed node group would report.
type Config struct {
	// Name is the Node and lease name, e.g. "ip-10-0-1-1.us-west-2.compute.internal".
	Name string
	// Mode is Modern (default) or Legacy.
	Mode Mode
	// LeaseDurationSeconds is nodeLeaseDurationSeconds (default 40).
	LeaseDurationSeconds int32
	// RenewInterval defaults to a quarter of the lease duration, as in the kubelet.
	RenewInterval time.Duration
	// NodeStatusUpdateFrequency is how often the kubelet computes its node status (default 10 s);
	// the first attempt reads its Node from a watch cache, retries GET it from the API server.
	NodeStatusUpdateFrequency time.Duration
	// NodeStatusReportFrequency is how often an unchanged status is still patched (default 5 m).
	NodeStatusReportFrequency time.Duration

	// InstanceType selects capacity, allocatable, architecture and the default max pods.
	InstanceType string
	// Zone is the availability zone, e.g. "us-west-2a"; defaults to one of three spread by name.
	Zone string
	// NodeGroup is the eks.amazonaws.com/nodegroup label.
	NodeGroup string
	// KubeletVersion defaults to ModernKubeletVersion or LegacyKubeletVersion by Mode.
	KubeletVersion string
	// MaxPods overrides the instance type's pod capacity (VPC CNI formula) when > 0.
	MaxPods int32
	// RegistryPullQPS and RegistryBurst are the image pull limits /configz reports (default the
	// kubelet's 5 and 10; KubeletConfiguration).
	RegistryPullQPS, RegistryBurst int32
	// InternalIP defaults to the address encoded in an "ip-a-b-c-d..." name, else one derived from it.
	InternalIP string
	// KubeletPort is daemonEndpoints.kubeletEndpoint.Port (default 10250). A test that serves
	// the kubelet API itself (for example /configz) points InternalIP and KubeletPort at its server.
	KubeletPort int32
	// Images is the number of container images in status.images (default 50; -1 for none).
	Images int
	// Labels are added to (and override) the default node labels.
	Labels map[string]string
}

// instanceType holds what the simulator needs to know about an EC2 instance type.
type instanceType struct {
	vCPU   int
	memGiB int
	// maxPods follows the VPC CNI formula ENIs × (IPv4 per ENI − 1) + 2 without prefix delegation.
	maxPods int32
	arch    string
}

// instanceTypes is a small, representative subset; callers with other types set MaxPods and use
// the closest size, since the simulator only needs plausible numbers.
var instanceTypes = map[string]instanceType{
	"t3.medium":   {2, 4, 17, "amd64"},
	"t3.large":    {2, 8, 35, "amd64"},
	"t3.xlarge":   {4, 16, 58, "amd64"},
	"m5.large":    {2, 8, 29, "amd64"},
	"m5.xlarge":   {4, 16, 58, "amd64"},
	"m5.2xlarge":  {8, 32, 58, "amd64"},
	"m5.4xlarge":  {16, 64, 234, "amd64"},
	"m5.8xlarge":  {32, 128, 234, "amd64"},
	"m5.24xlarge": {96, 384, 737, "amd64"},
	"c5.large":    {2, 4, 29, "amd64"},
	"c5.xlarge":   {4, 8, 58, "amd64"},
	"r5.large":    {2, 16, 29, "amd64"},
	"m6i.large":   {2, 8, 29, "amd64"},
	"m6g.large":   {2, 8, 29, "arm64"},
	"m7g.large":   {2, 8, 29, "arm64"},
	"c6g.large":   {2, 4, 29, "arm64"},
}

// InstanceTypes lists the instance types the simulator knows, sorted.
func InstanceTypes() []string {
	names := make([]string, 0, len(instanceTypes))
	for n := range instanceTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MaxPods returns the default pod capacity of an instance type, as the EKS AMI computes it for
// the VPC CNI without prefix delegation.
func MaxPods(instance string) (int32, error) {
	it, ok := instanceTypes[instance]
	if !ok {
		return 0, fmt.Errorf("unknown instance type %q (known: %s)", instance, strings.Join(InstanceTypes(), ", "))
	}
	return it.maxPods, nil
}

var zoneRE = regexp.MustCompile(`^([a-z]{2}(-gov)?-[a-z]+-\d+)([a-z])$`)

// withDefaults validates c and fills every unset field.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Name == "" {
		return c, errors.New("kubeletsim: Config.Name is required")
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", c.Name, msg))
	}
	switch c.Mode {
	case "":
		c.Mode = Modern
	case Modern, Legacy:
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q (want %q or %q)", c.Mode, Modern, Legacy))
	}
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.LeaseDurationSeconds < 1 {
		errs = append(errs, fmt.Errorf("LeaseDurationSeconds must be positive, got %d", c.LeaseDurationSeconds))
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = time.Duration(float64(time.Duration(c.LeaseDurationSeconds)*time.Second) * renewIntervalFraction)
	}
	if c.RenewInterval < 0 {
		errs = append(errs, fmt.Errorf("RenewInterval must be positive, got %s", c.RenewInterval))
	}
	if c.NodeStatusUpdateFrequency == 0 {
		c.NodeStatusUpdateFrequency = DefaultNodeStatusUpdateFrequency
	}
	if c.NodeStatusReportFrequency == 0 {
		c.NodeStatusReportFrequency = DefaultNodeStatusReportFrequency
	}
	if c.NodeStatusUpdateFrequency < 0 || c.NodeStatusReportFrequency < 0 {
		errs = append(errs, errors.New("node status frequencies must be positive"))
	}
	if c.InstanceType == "" {
		c.InstanceType = DefaultInstanceType
	}
	if _, ok := instanceTypes[c.InstanceType]; !ok {
		errs = append(errs, fmt.Errorf("unknown instance type %q (known: %s)", c.InstanceType, strings.Join(InstanceTypes(), ", ")))
	}
	if c.MaxPods == 0 {
		c.MaxPods = instanceTypes[c.InstanceType].maxPods
	}
	if c.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("MaxPods must be positive, got %d", c.MaxPods))
	}
	if c.Zone == "" {
		c.Zone = []string{"us-west-2a", "us-west-2b", "us-west-2c"}[hash(c.Name)%3]
	}
	if !zoneRE.MatchString(c.Zone) {
		errs = append(errs, fmt.Errorf("zone %q is not an AWS availability zone like us-west-2a", c.Zone))
	}
	if c.NodeGroup == "" {
		c.NodeGroup = DefaultNodeGroup
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = ModernKubeletVersion
		if c.Mode == Legacy {
			c.KubeletVersion = LegacyKubeletVersion
		}
	}
	if !strings.HasPrefix(c.KubeletVersion, "v") {
		errs = append(errs, fmt.Errorf("KubeletVersion %q must start with v, like %s", c.KubeletVersion, ModernKubeletVersion))
	}
	if c.InternalIP == "" {
		c.InternalIP = ipFromName(c.Name)
	}
	if ip := net.ParseIP(c.InternalIP); ip == nil || ip.To4() == nil {
		errs = append(errs, fmt.Errorf("InternalIP %q is not an IPv4 address", c.InternalIP))
	}
	if c.RegistryPullQPS == 0 {
		c.RegistryPullQPS = 5
	}
	if c.RegistryBurst == 0 {
		c.RegistryBurst = 10
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = DefaultKubeletPort
	}
	if c.KubeletPort < 1 || c.KubeletPort > 65535 {
		errs = append(errs, fmt.Errorf("KubeletPort %d out of range", c.KubeletPort))
	}
	if c.Images == 0 {
		c.Images = DefaultImages
	}
	if c.Images < 0 {
		c.Images = 0
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("kubeletsim: invalid config for %q: %w", c.Name, err)
	}
	return c, nil
}

func (c Config) region() string { return zoneRE.FindStringSubmatch(c.Zone)[1] }

// renewTimeout is the kubelet's heartbeat client timeout: the node status update frequency,
// capped at the lease duration. It also appears as "?timeout=10s" on every heartbeat request.
func (c Config) heartbeatTimeout() time.Duration {
	t := c.NodeStatusUpdateFrequency
	if lease := time.Duration(c.LeaseDurationSeconds) * time.Second; t > lease {
		t = lease
	}
	return t
}

var ipNameRE = regexp.MustCompile(`^ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(\.|$)`)

// ipFromName returns the address encoded in EC2 private DNS names ("ip-10-0-1-1.ec2.internal"),
// or a stable 10.x.y.z derived from any other name.
func ipFromName(name string) string {
	if m := ipNameRE.FindStringSubmatch(name); m != nil {
		ok := true
		for _, p := range m[1:5] {
			if n, _ := strconv.Atoi(p); n > 255 {
				ok = false
			}
		}
		if ok {
			return strings.Join(m[1:5], ".")
		}
	}
	h := hash(name)
	return fmt.Sprintf("10.%d.%d.%d", byte(h>>16), byte(h>>8), 1+byte(h)%254)
}

// NodeName returns the EC2-style private DNS name of the i-th simulated node in a region, for
// callers that need many distinct, realistic names: NodeName(0) is
// "ip-10-0-0-1.us-west-2.compute.internal". It covers 16.7 million nodes.
func NodeName(i int) string {
	n := i + 1
	return fmt.Sprintf("ip-10-%d-%d-%d.us-west-2.compute.internal", byte(n>>16), byte(n>>8), byte(n))
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
