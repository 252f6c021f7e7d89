package kubeletsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ecrAccount is the account of the EKS add-on images in most regions.
const ecrAccount = "602401143452"

// instanceID is a stable, EC2-looking instance ID for a node name.
func instanceID(name string) string {
	sum := sha256.Sum256([]byte("instance/" + name))
	return "i-0" + hex.EncodeToString(sum[:])[:16]
}

// zoneID maps us-west-2a to usw2-az1 and so on; real zone IDs are account-specific, a stable
// plausible value is all the simulator needs.
func zoneID(zone string) string {
	m := zoneRE.FindStringSubmatch(zone)
	parts := strings.Split(m[1], "-")
	short := ""
	for _, p := range parts[:len(parts)-1] {
		short += p[:1]
	}
	if parts[0] != "" {
		short = parts[0] + short[1:]
	}
	return fmt.Sprintf("%s%s-az%d", short, parts[len(parts)-1], int(m[3][0]-'a')+1)
}

// internalDNS is the EC2 private DNS name for the node.
func (c Config) internalDNS() string {
	if strings.HasSuffix(c.Name, ".compute.internal") || strings.HasSuffix(c.Name, ".ec2.internal") {
		return c.Name
	}
	return "ip-" + strings.ReplaceAll(c.InternalIP, ".", "-") + "." + c.region() + ".compute.internal"
}

// userAgent is what the kubelet sends, e.g. "kubelet/v1.29.0 (linux/amd64) kubernetes/3034fd4".
func (c Config) userAgent() string {
	v := c.KubeletVersion
	if i := strings.Index(v, "-"); i > 0 {
		v = v[:i]
	}
	return fmt.Sprintf("kubelet/%s (linux/%s) kubernetes/3034fd4", v, instanceTypes[c.InstanceType].arch)
}

// labels are the labels a kubelet on an EKS managed node group registers with. All of them are
// allowed to a kubelet by the NodeRestriction admission plugin.
func (c Config) labels() map[string]string {
	it := instanceTypes[c.InstanceType]
	l := map[string]string{
		"kubernetes.io/arch":                            it.arch,
		"kubernetes.io/os":                              "linux",
		"kubernetes.io/hostname":                        c.internalDNS(),
		"beta.kubernetes.io/arch":                       it.arch,
		"beta.kubernetes.io/os":                         "linux",
		"beta.kubernetes.io/instance-type":              c.InstanceType,
		"node.kubernetes.io/instance-type":              c.InstanceType,
		"topology.kubernetes.io/region":                 c.region(),
		"topology.kubernetes.io/zone":                   c.Zone,
		"failure-domain.beta.kubernetes.io/region":      c.region(),
		"failure-domain.beta.kubernetes.io/zone":        c.Zone,
		"topology.k8s.aws/zone-id":                      zoneID(c.Zone),
		"eks.amazonaws.com/nodegroup":                   c.NodeGroup,
		"eks.amazonaws.com/capacityType":                "ON_DEMAND",
		"eks.amazonaws.com/nodegroup-image":             "ami-0" + hex.EncodeToString([]byte(c.NodeGroup + "ami"))[:16],
		"eks.amazonaws.com/sourceLaunchTemplateId":      "lt-0" + hex.EncodeToString([]byte(c.NodeGroup + "lt"))[:16],
		"eks.amazonaws.com/sourceLaunchTemplateVersion": "1",
	}
	for k, v := range c.Labels {
		l[k] = v
	}
	return l
}

// resources returns capacity and allocatable the way the EKS AMI's bootstrap configures the
// kubelet: kube-reserved CPU by the 6/1/0.5/0.25 % per core ladder, kube-reserved memory of
// 255 Mi + 11 Mi per pod, and a 100 Mi hard eviction threshold.
func (c Config) resources() (capacity, allocatable corev1.ResourceList) {
	it := instanceTypes[c.InstanceType]
	reservedMilli := int64(0)
	for core := 1; core <= it.vCPU; core++ {
		switch {
		case core == 1:
			reservedMilli += 60
		case core == 2:
			reservedMilli += 10
		case core <= 4:
			reservedMilli += 5
		default:
			reservedMilli += 2 // 0.25 % of a core, rounded like the AMI's integer arithmetic
		}
	}
	// The hypervisor and kernel keep a few percent of the instance's memory.
	memKi := int64(it.memGiB) * 1024 * 1024 * 96 / 100
	reservedMemKi := (255+11*int64(c.MaxPods))*1024 + 100*1024
	ephemeralKi := int64(20959212) // the managed node group's default 20 GiB root volume
	capacity = corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(it.vCPU), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memKi*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeralKi*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(c.MaxPods), resource.DecimalSI),
		"hugepages-1Gi":                 *resource.NewQuantity(0, resource.DecimalSI),
		"hugepages-2Mi":                 *resource.NewQuantity(0, resource.DecimalSI),
		"attachable-volumes-aws-ebs":    *resource.NewQuantity(25, resource.DecimalSI),
	}
	allocatable = capacity.DeepCopy()
	allocatable[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(it.vCPU)*1000-reservedMilli, resource.DecimalSI)
	allocatable[corev1.ResourceMemory] = *resource.NewQuantity((memKi-reservedMemKi)*1024, resource.BinarySI)
	// 10 % of the root volume is the nodefs eviction threshold.
	allocatable[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(ephemeralKi*1024*9/10, resource.DecimalSI)
	return capacity, allocatable
}

// conditions are the four conditions a healthy kubelet posts. Heartbeat and transition times
// are both now; updateConditions keeps transition times of unchanged conditions.
func readyConditions(now time.Time) []corev1.NodeCondition {
	t := metav1.NewTime(now)
	return []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available", LastHeartbeatTime: t, LastTransitionTime: t},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure", LastHeartbeatTime: t, LastTransitionTime: t},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available", LastHeartbeatTime: t, LastTransitionTime: t},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: t, LastTransitionTime: t},
	}
}

// updateConditions returns the kubelet's view of the conditions given those on the Node (which
// the node lifecycle controller may have set to Unknown), and whether anything but heartbeat
// times changed — the kubelet's trigger for an immediate status patch.
func updateConditions(current []corev1.NodeCondition, now time.Time) ([]corev1.NodeCondition, bool) {
	want := readyConditions(now)
	changed := false
	for i := range want {
		var have *corev1.NodeCondition
		for j := range current {
			if current[j].Type == want[i].Type {
				have = &current[j]
				break
			}
		}
		if have == nil || have.Status != want[i].Status || have.Reason != want[i].Reason || have.Message != want[i].Message {
			changed = true
			continue
		}
		want[i].LastTransitionTime = have.LastTransitionTime
	}
	return want, changed
}

// images returns n plausible container images: the EKS add-ons every node pulls, then
// application images from a private ECR registry. They are stable per node name so that
// repeated registrations of one node look the same.
func (c Config) images() []corev1.ContainerImage {
	if c.Images <= 0 {
		return nil
	}
	region := c.region()
	ecr := func(account, repo string) string {
		return fmt.Sprintf("%s.dkr.ecr.%s.amazonaws.com/%s", account, region, repo)
	}
	base := []struct {
		repo, tag string
		size      int64
	}{
		{ecr(ecrAccount, "amazon-k8s-cni"), "v1.16.0-eksbuild.1", 43_012_351},
		{ecr(ecrAccount, "amazon-k8s-cni-init"), "v1.16.0-eksbuild.1", 57_410_733},
		{ecr(ecrAccount, "amazon/aws-network-policy-agent"), "v1.0.7-eksbuild.1", 31_274_126},
		{ecr(ecrAccount, "eks/kube-proxy"), "v1.29.0-minimal-eksbuild.1", 33_845_104},
		{ecr(ecrAccount, "eks/coredns"), "v1.11.1-eksbuild.4", 18_311_421},
		{ecr(ecrAccount, "eks/aws-ebs-csi-driver"), "v1.26.0", 89_334_012},
		{ecr(ecrAccount, "eks/csi-node-driver-registrar"), "v2.9.1-eks-1-29-1", 10_713_512},
		{ecr(ecrAccount, "eks/livenessprobe"), "v2.11.0-eks-1-29-1", 10_211_007},
		{"public.ecr.aws/aws-observability/aws-for-fluent-bit", "2.32.0", 119_230_874},
		{"quay.io/prometheus/node-exporter", "v1.7.0", 11_730_431},
		{ecr(ecrAccount, "eks/pause"), "3.5", 298_689},
	}
	rng := rand.New(rand.NewPCG(uint64(hash(c.Name)), 7))
	account := fmt.Sprintf("%012d", 100_000_000_000+rng.Int64N(899_999_999_999))
	teams := []string{"payments", "search", "checkout", "identity", "catalog", "ledger", "ads", "media"}
	out := make([]corev1.ContainerImage, 0, c.Images)
	for i := 0; i < c.Images; i++ {
		var repo, tag string
		var size int64
		if i < len(base) {
			repo, tag, size = base[i].repo, base[i].tag, base[i].size
		} else {
			team := teams[rng.IntN(len(teams))]
			repo = ecr(account, fmt.Sprintf("%s/%s-svc-%02d", team, team, rng.IntN(40)))
			tag = fmt.Sprintf("2024.%02d.%02d-%07x", 1+rng.IntN(12), 1+rng.IntN(28), rng.Uint32()>>4)
			size = 40_000_000 + rng.Int64N(900_000_000)
		}
		sum := sha256.Sum256([]byte(repo + ":" + tag))
		names := []string{repo + "@sha256:" + hex.EncodeToString(sum[:]), repo + ":" + tag}
		if repo == ecr(ecrAccount, "eks/pause") {
			// containerd pins the sandbox image under a local alias as well.
			names = append(names, "localhost/kubernetes/pause:latest")
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: size})
	}
	return out
}

// newNode builds the Node a kubelet registers, with a full status.
func (c Config) newNode(now time.Time) *corev1.Node {
	capacity, allocatable := c.resources()
	it := instanceTypes[c.InstanceType]
	sum := sha256.Sum256([]byte("machine/" + c.Name))
	machineID := hex.EncodeToString(sum[:16])
	boot := sha256.Sum256([]byte(fmt.Sprintf("boot/%s/%d", c.Name, now.UnixNano())))
	bootID := hex.EncodeToString(boot[:16])
	bootID = bootID[:8] + "-" + bootID[8:12] + "-" + bootID[12:16] + "-" + bootID[16:20] + "-" + bootID[20:]
	systemUUID := "ec2" + machineID[3:8] + "-" + machineID[8:12] + "-" + machineID[12:16] + "-" + machineID[16:20] + "-" + machineID[20:32]
	kernel, osImage := "5.10.205-195.807.amzn2.x86_64", "Amazon Linux 2"
	if it.arch == "arm64" {
		kernel = "5.10.205-195.807.amzn2.aarch64"
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   c.Name,
			Labels: c.labels(),
			Annotations: map[string]string{
				"alpha.kubernetes.io/provided-node-ip":                   c.InternalIP,
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: fmt.Sprintf("aws:///%s/%s", c.Zone, instanceID(c.Name)),
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Conditions:  readyConditions(now),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: c.InternalIP},
				{Type: corev1.NodeInternalDNS, Address: c.internalDNS()},
				{Type: corev1.NodeHostName, Address: c.internalDNS()},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{
				KubeletEndpoint: corev1.DaemonEndpoint{Port: c.KubeletPort},
			},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               machineID,
				SystemUUID:              systemUUID,
				BootID:                  bootID,
				KernelVersion:           kernel,
				OSImage:                 osImage,
				ContainerRuntimeVersion: "containerd://1.7.11",
				KubeletVersion:          c.KubeletVersion,
				KubeProxyVersion:        c.KubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            it.arch,
			},
			Images: c.images(),
		},
	}
}
