package rules

import (
	"fmt"
	"strings"
)

// NodeOS is the operating system family of a node, as far as the max-pods fix depends on it.
type NodeOS string

// Node operating systems with their own way of setting the kubelet's max pods.
const (
	OSUnknown         NodeOS = ""
	OSAmazonLinux2    NodeOS = "al2"
	OSAmazonLinux2023 NodeOS = "al2023"
	OSBottlerocket    NodeOS = "bottlerocket"
	OSUbuntu          NodeOS = "ubuntu"
	OSWindows         NodeOS = "windows"
)

// nodeOSNames names each known OS for people.
var nodeOSNames = map[NodeOS]string{
	OSAmazonLinux2:    "Amazon Linux 2",
	OSAmazonLinux2023: "Amazon Linux 2023",
	OSBottlerocket:    "Bottlerocket",
	OSUbuntu:          "Ubuntu",
	OSWindows:         "Windows",
}

// String names the OS for people.
func (o NodeOS) String() string { return nameOr(nodeOSNames, o, "unknown OS") }

// DetectNodeOS reads the OS family from a Node's status.nodeInfo.osImage (for example "Amazon
// Linux 2", "Amazon Linux 2023.5.20240701", "Bottlerocket OS 1.20.0 (aws-k8s-1.29)") or from the
// PRETTY_NAME of an os-release file in a logs bundle. Unrecognised text gives OSUnknown.
func DetectNodeOS(osImage string) NodeOS {
	s := strings.ToLower(strings.TrimSpace(osImage))
	switch {
	case strings.HasPrefix(s, "amazon linux 2023"):
		return OSAmazonLinux2023
	case s == "amazon linux 2" || strings.HasPrefix(s, "amazon linux 2 ") || strings.HasPrefix(s, "amazon linux 2."):
		return OSAmazonLinux2
	case strings.HasPrefix(s, "bottlerocket"):
		return OSBottlerocket
	case strings.HasPrefix(s, "ubuntu"):
		return OSUbuntu
	case strings.HasPrefix(s, "windows"):
		return OSWindows
	}
	return OSUnknown
}

// Provisioner is what launched a node, as far as the max-pods fix depends on it.
type Provisioner string

// Node provisioners recognised from well-known labels.
const (
	ProvisionerUnknown          Provisioner = ""
	ProvisionerKarpenter        Provisioner = "karpenter"
	ProvisionerManagedNodeGroup Provisioner = "managed-node-group"
	// ProvisionerSelfManaged is a node group that eksctl created as an Auto Scaling group of its own.
	ProvisionerSelfManaged Provisioner = "self-managed"
)

// provisionerNames names each known provisioner for people.
var provisionerNames = map[Provisioner]string{
	ProvisionerKarpenter:        "Karpenter",
	ProvisionerManagedNodeGroup: "managed node group",
	ProvisionerSelfManaged:      "self-managed node group",
}

// String names the provisioner for people.
func (p Provisioner) String() string { return nameOr(provisionerNames, p, "unknown provisioner") }

// nameOr is names[k], or unknown for a value without a name.
func nameOr[K comparable](names map[K]string, k K, unknown string) string {
	if n, ok := names[k]; ok {
		return n
	}
	return unknown
}

// Well-known node labels that name the provisioner.
const (
	LabelKarpenterNodePool    = "karpenter.sh/nodepool"         // Karpenter v1beta1 and v1
	LabelKarpenterProvisioner = "karpenter.sh/provisioner-name" // Karpenter v1alpha5
	LabelEKSNodegroup         = "eks.amazonaws.com/nodegroup"   // EKS managed node groups
	LabelEksctlNodegroup      = "alpha.eksctl.io/nodegroup-name"
)

// DetectProvisioner reads the provisioner from a Node's labels. Karpenter wins over a node group
// label (a Karpenter node never has one unless copied by hand); an eksctl label without the EKS
// one is a self-managed node group. Anything else is ProvisionerUnknown (a plain Auto Scaling
// group, Terraform, ... look the same from the API server).
func DetectProvisioner(labels map[string]string) Provisioner {
	switch {
	case labels[LabelKarpenterNodePool] != "" || labels[LabelKarpenterProvisioner] != "":
		return ProvisionerKarpenter
	case labels[LabelEKSNodegroup] != "":
		return ProvisionerManagedNodeGroup
	case labels[LabelEksctlNodegroup] != "":
		return ProvisionerSelfManaged
	}
	return ProvisionerUnknown
}

// MaxPodsFix says how to give a node's kubelet maxPods n on the node's OS and provisioner. With
// customNetworking the text never suggests leaving max pods to the AMI or nodeadm: both compute
// it from the instance type alone and count the primary ENI that custom networking takes from
// pods. An unknown OS lists every option. The text is one line, suitable as a finding's fix.
func MaxPodsFix(os NodeOS, provisioner Provisioner, n int, customNetworking bool) string {
	osFix := func(o NodeOS) string {
		switch o {
		case OSAmazonLinux2:
			return fmt.Sprintf("Amazon Linux 2: in the user data run /etc/eks/bootstrap.sh CLUSTER --use-max-pods false --kubelet-extra-args '--max-pods=%d'", n)
		case OSAmazonLinux2023:
			s := fmt.Sprintf("Amazon Linux 2023: in the user data give nodeadm a NodeConfig (apiVersion: node.eks.aws/v1alpha1) with spec.kubelet.config.maxPods: %d", n)
			if customNetworking {
				s += " (nodeadm's own value comes from the instance type and ignores custom networking)"
			}
			return s
		case OSBottlerocket:
			return fmt.Sprintf("Bottlerocket: in the user data (TOML) set settings.kubernetes.max-pods = %d", n)
		case OSUbuntu:
			return fmt.Sprintf("Ubuntu EKS AMI: pass --use-max-pods false --kubelet-extra-args '--max-pods=%d' to /etc/eks/bootstrap.sh in the user data", n)
		case OSWindows:
			return fmt.Sprintf("Windows: pass -KubeletExtraArgs '--max-pods=%d' to Start-EKSBootstrap.ps1 in the user data", n)
		}
		return ""
	}
	var parts []string
	switch provisioner {
	case ProvisionerKarpenter:
		s := fmt.Sprintf("Karpenter: set spec.kubelet.maxPods: %d in the node's EC2NodeClass (karpenter.k8s.aws/v1; before v1 the NodePool's spec.template.spec.kubelet)", n)
		if customNetworking {
			s += ", or set the controller setting reservedENIs to 1 (RESERVED_ENIS; before v0.33 aws.reservedENIs in karpenter-global-settings) so Karpenter computes max pods without the ENI custom networking takes"
		}
		parts = append(parts, s+"; Karpenter replaces drifted nodes")
	case ProvisionerManagedNodeGroup:
		s := "managed node group: use a launch template with the AMI ID and this in its user data"
		if of := osFix(os); of != "" {
			s += " - " + of
		} else {
			s += " (see the OS options below)"
		}
		parts = append(parts, s+"; then update the node group to the new launch template version")
		if os == OSUnknown {
			parts = append(parts, allOSFixes(osFix)...)
		}
	default:
		if of := osFix(os); of != "" {
			parts = append(parts, of+"; then replace the nodes")
		} else {
			parts = append(parts, allOSFixes(osFix)...)
			parts = append(parts, fmt.Sprintf("Karpenter: spec.kubelet.maxPods: %d in the EC2NodeClass", n),
				"managed node group: the same in a launch template with the AMI ID")
		}
	}
	return fmt.Sprintf("give the kubelet max pods %d: ", n) + strings.Join(parts, "; ")
}

func allOSFixes(osFix func(NodeOS) string) []string {
	var out []string
	for _, o := range []NodeOS{OSAmazonLinux2, OSAmazonLinux2023, OSBottlerocket} {
		out = append(out, osFix(o))
	}
	return out
}
