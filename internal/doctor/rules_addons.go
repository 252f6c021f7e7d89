package doctor

import "github.com/nodekeeper/nodekeeper/internal/findings"

// SectionAddons holds the image pull and add-on findings (NK75x): what the kubelets' pull
// limiter turned away, the health of the add-ons every node depends on (aws-node, kube-proxy,
// CoreDNS), the VPC CNI's version against the cluster's, and Karpenter's lease collector.
const SectionAddons = "addons"

// sectionAddons is the section's entry in Sections.
var sectionAddons = findings.SectionSpec{Name: SectionAddons, Title: "Image pulls and add-ons"}

// Documentation pages of the section's rules.
const (
	DocKubeletPullLimits = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/#kubelet-config-k8s-io-v1beta1-KubeletConfiguration"
	DocEKSAddons         = "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html"
	DocCNIVersions       = "https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html"
	DocKarpenterLeaseGC  = "https://github.com/kubernetes-sigs/karpenter/pull/1586"
)

// The section's rules.
var (
	RulePullQPSExceeded = findings.Rule{
		Code: "NK751", Name: "image-pulls-refused", Section: SectionAddons, Severity: findings.Warning,
		Title:       "image pulls failed with \"pull QPS exceeded\": the kubelet's own pull limiter turned them away",
		Remediation: "raise the node's kubelet registryBurst to at least its max pods and registryPullQPS (50 is what AWS Support recommended in seed 002), or set registryPullQPS: 0 for no limit; the evidence names the node's values and where to set them for its OS; the limiter refuses at once rather than waiting, so each refused pull backs off (ImagePullBackOff) for up to 5 minutes",
		DocURL:      DocKubeletPullLimits,
	}
	RuleAddonUnavailable = findings.Rule{
		Code: "NK752", Name: "addon-unavailable", Section: SectionAddons, Severity: findings.Warning,
		Title:       "add-on with unavailable pods (aws-node, kube-proxy or CoreDNS)",
		Remediation: "kubectl -n kube-system describe the add-on and its pods not Ready: without aws-node a node's new pods get no address (NK703), without kube-proxy its Service traffic and ipamd's path to the API server break (NK401), without CoreDNS names do not resolve; the restart findings (NK753) give the containers' last termination reason",
		DocURL:      DocEKSAddons,
	}
	RuleAddonRestarts = findings.Rule{
		Code: "NK753", Name: "addon-pods-restarting", Section: SectionAddons, Severity: findings.Warning,
		Title:       "add-on pods restarting (aws-node, kube-proxy or CoreDNS)",
		Remediation: "read the previous container's log (kubectl -n kube-system logs POD -c CONTAINER --previous): OOMKilled (exit 137) wants a higher memory limit, aws-node exiting with an error usually cannot reach the API server or EC2 (CLUSTER_ENDPOINT, NK401; its IAM role), CoreDNS restarting on liveness probes is overloaded (more replicas, or the cluster-proportional autoscaler)",
		DocURL:      DocEKSAddons,
	}
	RuleCNIVersionForCluster = findings.Rule{
		Code: "NK754", Name: "cni-version-for-cluster", Section: SectionAddons, Severity: findings.Warning,
		Title:       "aws-node (Amazon VPC CNI) older than AWS recommends for the cluster's Kubernetes version",
		Remediation: "update the VPC CNI (the Amazon EKS add-on: aws eks update-addon --addon-name vpc-cni; self-managed: the manifest or Helm chart of the release) one minor version at a time; AWS recommends the latest release for every Kubernetes version",
		DocURL:      DocCNIVersions,
	}
	RuleKarpenterLeaseGC = findings.Rule{
		Code: "NK755", Name: "karpenter-lease-gc", Section: SectionAddons, Severity: findings.Warning,
		Title:       "Karpenter version whose lease garbage collection deletes ownerless node leases without checking the Node",
		Remediation: "upgrade Karpenter to v1.1.0 or later (the collector was removed in kubernetes-sigs/karpenter PR 1586) and let nodekeeper's controller collect leaked leases with its live Node check and UID/resourceVersion preconditions; until then Karpenter deletes every lease in kube-node-lease that has no ownerReference when it sees it created, including the leases of registering nodes and the ones zombie kubelets re-create",
		DocURL:      DocKarpenterLeaseGC,
	}
)
