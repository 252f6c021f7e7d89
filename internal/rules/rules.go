// Package rules holds the node rules that doctor (a live cluster) and bundle (an EKS logs
// collector bundle) share: the kubelet configuration (kubelet.go), the Amazon VPC CNI settings
// (cni.go), pod capacity against the addresses the VPC CNI can give (capacity.go) and the max-pods
// fix per node OS and provisioner (remediation.go). Each is a pure function from what was read to
// findings, so a setting is judged the same way whether it came from the API server or a file.
// Rules is the list of the rules they produce; doctor and bundle add their own lists to it in the
// catalog the CLI builds (findings.NewCatalog).
package rules

import "github.com/nodekeeper/nodekeeper/internal/findings"

// Section names of the shared rules (stable: they appear in JSON and JUnit output).
const (
	SectionNodes   = "nodes"
	SectionKubelet = "kubelet"
	SectionAWSNode = "aws-node"
)

// The shared rules. Codes are stable; docs/doctor.md lists them. NK1xx nodes, NK2xx kubelet
// configuration, NK4xx aws-node.
var (
	RuleMaxPodsAboveIPs = findings.Rule{
		Code: "NK101", Name: "max-pods-above-ip-capacity", Section: SectionNodes, Severity: findings.Error,
		Title:       "kubelet max pods above the pod addresses the VPC CNI can give",
		Remediation: "set the kubelet's maxPods to the calculator's value for the CNI mode in use (nodekeeper maxpods TYPE --custom-networking/--prefix-delegation) where the node's OS takes it: AL2 bootstrap.sh --use-max-pods false --kubelet-extra-args '--max-pods=N', AL2023 nodeadm NodeConfig spec.kubelet.config.maxPods, Bottlerocket settings.kubernetes.max-pods, Karpenter EC2NodeClass spec.kubelet.maxPods (or reservedENIs: 1 with custom networking), managed node groups the same in a launch template with an AMI ID; each finding's evidence names the fix for its node; pods beyond the address capacity stay in ContainerCreating",
		DocURL:      DocMaxPods,
	}
	RuleMaxPodsBelow = findings.Rule{
		Code: "NK102", Name: "max-pods-below-recommendation", Section: SectionNodes, Severity: findings.Info,
		Title:       "kubelet max pods below what the node's addresses allow",
		Remediation: "raise maxPods to the calculator's value if you want the density (for example after enabling prefix delegation the AMI default stays at the secondary-IP value)",
		DocURL:      DocPrefixDelegation,
	}
	RuleInstanceUnknown = findings.Rule{
		Code: "NK103", Name: "instance-type-unknown", Section: SectionNodes, Severity: findings.Info,
		Title:       "node capacity not checked: instance type missing or unknown",
		Remediation: "nodes need the node.kubernetes.io/instance-type label (set by the AWS cloud provider); for a type newer than nodekeeper's table, run doctor --aws (reads it from EC2) or update nodekeeper",
		DocURL:      DocMaxPods,
	}
	RulePrefixNotNitro = findings.Rule{
		Code: "NK104", Name: "prefix-delegation-not-nitro", Section: SectionNodes, Severity: findings.Info,
		Title:       "prefix delegation enabled on a non-Nitro instance (the CNI falls back to secondary IPs)",
		Remediation: "use Nitro instance types for nodes that should get /28 prefixes, or size maxPods for secondary IP mode",
		DocURL:      DocPrefixDelegation,
	}
	RuleRegistryPullQPS = findings.Rule{
		Code: "NK201", Name: "registry-pull-qps-low", Section: SectionKubelet, Severity: findings.Warning,
		Title:       "image pull rate limit below the node's pod density",
		Remediation: "raise registryPullQPS (for example to 50) and registryBurst to at least the node's max pods in the kubelet configuration, or set registryPullQPS: 0 for no limit; pulls above the limit fail at once with ErrImagePull \"pull QPS exceeded\"",
		DocURL:      DocKubeletConfig,
	}
	RuleSerializePulls = findings.Rule{
		Code: "NK202", Name: "serialized-image-pulls", Section: SectionKubelet, Severity: findings.Info,
		Title:       "image pulls run one at a time on a dense node",
		Remediation: "set serializeImagePulls: false (and maxParallelImagePulls) so one slow pull does not hold every other pod back",
		DocURL:      DocKubeletConfig,
	}
	RuleKubeAPIQPS = findings.Rule{
		Code: "NK203", Name: "kube-api-qps-low", Section: SectionKubelet, Severity: findings.Warning,
		Title:       "kubelet API client rate limit low for the node's pod density",
		Remediation: "raise kubeAPIQPS/kubeAPIBurst (defaults since Kubernetes 1.27: 50/100) so pod status updates are not throttled on the client side",
		DocURL:      DocKubeletConfig,
	}
	RuleMaxPodsMismatch = findings.Rule{
		Code: "NK204", Name: "max-pods-config-mismatch", Section: SectionKubelet, Severity: findings.Info,
		Title:       "kubelet configuration maxPods differs from the Node's pod capacity",
		Remediation: "podsPerCore or a configuration changed without a kubelet restart; make the configuration and the running kubelet agree",
		DocURL:      DocKubeletConfig,
	}
	RuleClusterEndpoint = findings.Rule{
		// Info, not a warning: AWS calls the variable optional ("might improve the initialization
		// time", seed 002) and every upstream manifest leaves it unset, so a warning would fire on
		// every self-managed VPC CNI. A node whose ipamd did not come up is reported from what was
		// measured there (doctor NK746, whose fix names CLUSTER_ENDPOINT).
		Code: "NK401", Name: "cluster-endpoint-unset", Section: SectionAWSNode, Severity: findings.Info,
		Title:       "CLUSTER_ENDPOINT unset: ipamd reaches the API server through kube-proxy's service rules",
		Remediation: "set CLUSTER_ENDPOINT on aws-node to the cluster endpoint (VPC CNI 1.12.1+; the managed add-on sets it) so ipamd starts before kube-proxy has programmed iptables; enable private endpoint access",
		DocURL:      DocCNIVars,
	}
	RulePDNoTarget = findings.Rule{
		Code: "NK402", Name: "prefix-delegation-without-target", Section: SectionAWSNode, Severity: findings.Error,
		Title:       "prefix delegation with WARM_PREFIX_TARGET, WARM_IP_TARGET and MINIMUM_IP_TARGET all unset or 0: aws-node exits",
		Remediation: "set WARM_PREFIX_TARGET=1 (or WARM_IP_TARGET/MINIMUM_IP_TARGET) together with ENABLE_PREFIX_DELEGATION=true",
		DocURL:      DocPrefixDelegation,
	}
	RuleTargetIgnored = findings.Rule{
		Code: "NK403", Name: "warm-target-ignored", Section: SectionAWSNode, Severity: findings.Info,
		Title:       "a warm pool setting has no effect in this combination",
		Remediation: "remove the setting that is ignored so the configuration says what the CNI does",
		DocURL:      DocCNIVars,
	}
	RuleNoWarmPool = findings.Rule{
		Code: "NK404", Name: "no-warm-pool", Section: SectionAWSNode, Severity: findings.Warning,
		Title:       "no warm IP pool: new pods wait for EC2 API calls",
		Remediation: "keep WARM_ENI_TARGET at 1 or set MINIMUM_IP_TARGET/WARM_IP_TARGET to the expected pods per node so a scale-up does not wait on (and get throttled by) AssignPrivateIpAddresses/CreateNetworkInterface",
		DocURL:      DocCNIBestPractices,
	}
	RuleWarmIPLow = findings.Rule{
		Code: "NK405", Name: "warm-ip-target-churn", Section: SectionAWSNode, Severity: findings.Warning,
		Title:       "small WARM_IP_TARGET without MINIMUM_IP_TARGET: EC2 API calls on every few pods",
		Remediation: "set MINIMUM_IP_TARGET to the usual pods per node (pre-scaling) and keep WARM_IP_TARGET for the burst; at fleet scale the churn ends in EC2 RequestLimitExceeded",
		DocURL:      DocCNIBestPractices,
	}
	RuleInvalidSetting = findings.Rule{
		Code: "NK406", Name: "invalid-cni-setting", Section: SectionAWSNode, Severity: findings.Warning,
		Title:       "a VPC CNI setting is not a valid value and is ignored",
		Remediation: "write integers for WARM_*/MINIMUM_IP_TARGET/MAX_ENI and true/false for booleans; the CNI silently falls back to its default",
		DocURL:      DocCNIVars,
	}
	RuleCooldownInvalid = findings.Rule{
		Code: "NK407", Name: "ip-cooldown-invalid", Section: SectionAWSNode, Severity: findings.Error,
		Title:       "IP_COOLDOWN_PERIOD is not a non-negative integer: aws-node exits",
		Remediation: "set IP_COOLDOWN_PERIOD to a number of seconds (default 30)",
		DocURL:      DocCNIVars,
	}
	RuleCooldownZero = findings.Rule{
		Code: "NK408", Name: "ip-cooldown-zero", Section: SectionAWSNode, Severity: findings.Warning,
		Title:       "IP_COOLDOWN_PERIOD=0: a deleted pod's address is reused before kube-proxy drops it",
		Remediation: "keep a cooldown (default 30 s; lower it with care for job-heavy clusters, never to 0)",
		DocURL:      DocCNIVars,
	}
	RuleCNIOld = findings.Rule{
		Code: "NK410", Name: "cni-version-old", Section: SectionAWSNode, Severity: findings.Warning,
		Title:       "old VPC CNI version",
		Remediation: "update the VPC CNI (EKS add-on or manifest) to a release supported with the cluster's Kubernetes version",
		DocURL:      DocCNIUpdate,
	}
	RuleEnvNotRead = findings.Rule{
		Code: "NK412", Name: "cni-setting-not-read", Section: SectionAWSNode, Severity: findings.Info,
		Title:       "a VPC CNI setting comes from a ConfigMap or Secret and was not read",
		Remediation: "the checks assumed the CNI default for it; pass the mode with flags if it matters",
		DocURL:      DocCNIVars,
	}
)

// Rules lists the shared rules, for the catalog.
var Rules = []findings.Rule{
	RuleMaxPodsAboveIPs,
	RuleMaxPodsBelow,
	RuleInstanceUnknown,
	RulePrefixNotNitro,
	RuleRegistryPullQPS,
	RuleSerializePulls,
	RuleKubeAPIQPS,
	RuleMaxPodsMismatch,
	RuleClusterEndpoint,
	RulePDNoTarget,
	RuleTargetIgnored,
	RuleNoWarmPool,
	RuleWarmIPLow,
	RuleInvalidSetting,
	RuleCooldownInvalid,
	RuleCooldownZero,
	RuleCNIOld,
	RuleEnvNotRead,
}
