package bundle

import (
	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Bundle sections; the configuration sections are those of the rules shared with doctor
// (internal/rules).
const (
	SectionKubeletLog = "kubelet-log"
	SectionCNILog     = "cni-log"
	SectionIO         = "io"
	SectionBootstrap  = bootstrap.Section
)

// Sections in display order.
var Sections = []findings.SectionSpec{
	{Name: SectionKubeletLog, Title: "Kubelet log"},
	{Name: SectionCNILog, Title: "VPC CNI logs (ipamd, plugin)"},
	{Name: SectionIO, Title: "Block IO delay"},
	{Name: SectionBootstrap, Title: "Bootstrap user data"},
	{Name: rules.SectionNodes, Title: "Pod capacity against VPC CNI addresses"},
	{Name: rules.SectionKubelet, Title: "Kubelet configuration"},
	{Name: rules.SectionAWSNode, Title: "aws-node (Amazon VPC CNI) settings"},
}

// The bundle's own rules (NK6xx).
var (
	RulePullQPS = findings.Rule{
		Code: "NK601", Name: "image-pull-qps-exceeded", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "image pulls failed with \"pull QPS exceeded\"",
		Remediation: "raise the kubelet's registryPullQPS (for example 50) and registryBurst; pods retry with back-off meanwhile (ErrImagePull, ImagePullBackOff)",
		DocURL:      rules.DocKubeletConfig,
	}
	RuleLeaseOwner = findings.Rule{
		Code: "NK602", Name: "lease-owner-ref-failed", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet could not get its Node to set the owner of its lease",
		Remediation: "a few lines at boot precede the Node's registration; lines that continue mean the Node was deleted while the kubelet runs (a zombie) or the kubelet cannot read it: check with nodekeeper leases",
		DocURL:      rules.DocLeases,
	}
	RuleNodeStatus = findings.Rule{
		Code: "NK603", Name: "node-status-update-failed", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet could not update its node status",
		Remediation: "check the node's path to the API server and API server throttling (429); a Node that stops reporting goes NotReady",
		DocURL:      rules.DocLeases,
	}
	RuleEvictionStats = findings.Rule{
		Code: "NK604", Name: "eviction-summary-stats-failed", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet's eviction manager could not get node summary stats",
		Remediation: "node-pressure eviction is blind while this lasts: check the container runtime's stats (crictl stats) and cAdvisor errors in the same log; when the error says the node is not found, the Node was deleted under a running kubelet (see NK603)",
		DocURL:      DocEviction,
	}
	RuleServingCert = findings.Rule{
		Code: "NK605", Name: "kubelet-serving-cert-missing", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet has no serving certificate: its kubelet-serving CSR was not approved",
		Remediation: "kubectl logs/exec/port-forward and metrics scrapes to this node fail until it has one: list the node's CSRs (kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving); EKS approves a kubelet-serving CSR only when it comes from system:node:<the instance's EC2 private DNS name> and asks for that name and the instance's addresses, so keep the hostname EC2 gives the node; approve by hand (kubectl certificate approve) only after checking the names in the request",
		DocURL:      DocServingCert,
	}
	RuleIPAMDRefused = findings.Rule{
		Code: "NK611", Name: "ipamd-connection-refused", Section: SectionCNILog, Severity: findings.Error,
		Title:       "the CNI plugin could not reach ipamd (127.0.0.1:50051 / ipamd.sock): pods stay in ContainerCreating",
		Remediation: "ipamd was not up: look for its start-up errors (API server unreachable, invalid settings) in ipamd.log; set CLUSTER_ENDPOINT so it does not wait for kube-proxy",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleIPAMDAPIServer = findings.Rule{
		Code: "NK612", Name: "ipamd-api-server-unreachable", Section: SectionCNILog, Severity: findings.Error,
		Title:       "ipamd could not reach the API server",
		Remediation: "set CLUSTER_ENDPOINT on aws-node (ipamd then does not depend on kube-proxy's iptables rules at boot) and check security groups between nodes and the control plane",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleEC2Throttle = findings.Rule{
		Code: "NK613", Name: "ec2-api-throttling", Section: SectionCNILog, Severity: findings.Warning,
		Title:       "EC2 API throttling (RequestLimitExceeded / ThrottlingException)",
		Remediation: "keep warm pools (WARM_ENI_TARGET, MINIMUM_IP_TARGET) so scale-ups need fewer EC2 calls, spread node launches, and ask for higher EC2 API rate quotas",
		DocURL:      rules.DocEC2Throttling,
	}
	RuleNoAddress = findings.Rule{
		Code: "NK614", Name: "ipam-no-address", Section: SectionCNILog, Severity: findings.Error,
		Title:       "the VPC CNI had no IP address to give a pod: pods stay in ContainerCreating",
		Remediation: "the node's ENIs are full or ipamd could not add addresses: keep the kubelet's maxPods within the node's address capacity (nodekeeper maxpods), enable prefix delegation on Nitro instances, and see NK613/NK615 in the same bundle for why no address could be added",
		DocURL:      rules.DocIPOptimization,
	}
	RuleSubnetExhausted = findings.Rule{
		Code: "NK615", Name: "subnet-addresses-exhausted", Section: SectionCNILog, Severity: findings.Error,
		Title:       "the subnet has no free addresses (InsufficientFreeAddressesInSubnet / InsufficientCidrBlocks)",
		Remediation: "give pods more address space: larger or additional subnets, a secondary VPC CIDR with custom networking (ENIConfig per zone), or prefix delegation with subnets that have free /28 blocks; release leaked ENIs (status available) in the subnet",
		DocURL:      rules.DocIPOptimization,
	}
	RuleIODelay = findings.Rule{
		Code: "NK621", Name: "block-io-delay", Section: SectionIO, Severity: findings.Warning,
		Title:       "processes spent long waiting for block IO (EBS throttling)",
		Remediation: "give the root volume more IOPS/throughput (gp3) or move container state (/var/lib/containerd, /var/lib/kubelet) to its own volume; the CNI binary and kubelet run from the root volume",
		DocURL:      DocEBSIO,
	}
	RuleBootIODelay = findings.Rule{
		Code: "NK622", Name: "boot-io-delay-ipamd-refused", Section: SectionIO, Severity: findings.Warning,
		Title:       "the root volume was throttled while the node booted, when ipamd refused connections",
		Remediation: "the VPC CNI starts from the root volume at boot: give the root volume more IOPS and throughput (gp3) and move container state (/var/lib/containerd, /var/lib/kubelet) to its own volume so image pulls at boot do not starve ipamd; set CLUSTER_ENDPOINT so ipamd does not also wait for kube-proxy",
		DocURL:      DocEBSIO,
	}
	// The user-data rules are internal/bootstrap's, shared with doctor --aws.
	RuleHostname           = bootstrap.RuleHostname
	RuleIptablesFlush      = bootstrap.RuleIptablesFlush
	RuleDocker             = bootstrap.RuleDocker
	RuleUserDataUntraced   = bootstrap.RuleUserDataUntraced
	RuleUserDataUnreadable = bootstrap.RuleUserDataUnreadable
	RuleScriptFailed       = findings.Rule{
		Code: "NK636", Name: "user-data-script-failed", Section: SectionBootstrap, Severity: findings.Error,
		Title:       "the user data script failed (cloud-init's scripts-user, bootstrap.sh)",
		Remediation: "read the script's output before the failure in cloud-init-output.log; with `set -e` (or bootstrap.sh's errexit) nothing after the failing command ran, so the node may not have joined or runs without the settings the script gives; fix the command and replace the node (cloud-init runs user data once per instance)",
		DocURL:      DocUserData,
	}
	RuleCommandNotFound = findings.Rule{
		Code: "NK637", Name: "user-data-command-not-found", Section: SectionBootstrap, Severity: findings.Warning,
		Title:       "the user data ran a command or file that is not on the node",
		Remediation: "install the tool in the AMI or earlier in the script, use its full path, or remove the step; AL2023 has no /etc/eks/bootstrap.sh (see NK639) and no amazon-linux-extras",
		DocURL:      DocUserData,
	}
	RuleNodeadmFailed = findings.Rule{
		Code: "NK638", Name: "nodeadm-failed", Section: SectionBootstrap, Severity: findings.Error,
		Title:       "nodeadm failed to initialise the node (AL2023)",
		Remediation: "read nodeadm's error: a NodeConfig it cannot parse or validate, EC2/IMDS calls that fail (a private subnet without an ec2 VPC endpoint, IMDS hop limit), or a missing cluster name, endpoint or CA; the kubelet does not start until nodeadm-config and nodeadm-run succeed",
		DocURL:      DocNodeadm,
	}
	RuleBootstrapRemoved = findings.Rule{
		Code: "NK639", Name: "bootstrap-sh-on-al2023", Section: SectionBootstrap, Severity: findings.Error,
		Title:       "the user data calls /etc/eks/bootstrap.sh on an AL2023 AMI, where it only prints an error and exits 1",
		Remediation: "AL2023 EKS AMIs are initialised by nodeadm: give the node a NodeConfig (application/node.eks.aws MIME part) with the cluster name, endpoint, CA and CIDR instead of bootstrap.sh arguments, and kubelet flags under spec.kubelet",
		DocURL:      DocNodeadm,
	}
	RuleMissing = findings.Rule{
		Code: "NK641", Name: "bundle-input-missing", Section: SectionKubeletLog, Severity: findings.Skipped,
		Title:       "a file these checks read is not in the bundle",
		Remediation: "collect the bundle with a current eks-log-collector.sh, as root, without --ignore_introspection",
		DocURL:      DocLogCollector,
	}
)

// Rules lists bundle's own rules, for the catalog (findings.NewCatalog with rules.Rules).
var Rules = []findings.Rule{
	RulePullQPS,
	RuleLeaseOwner,
	RuleNodeStatus,
	RuleEvictionStats,
	RuleServingCert,
	RuleIPAMDRefused,
	RuleIPAMDAPIServer,
	RuleEC2Throttle,
	RuleNoAddress,
	RuleSubnetExhausted,
	RuleIODelay,
	RuleBootIODelay,
	RuleHostname,
	RuleIptablesFlush,
	RuleDocker,
	RuleUserDataUntraced,
	RuleUserDataUnreadable,
	RuleScriptFailed,
	RuleCommandNotFound,
	RuleNodeadmFailed,
	RuleBootstrapRemoved,
	RuleMissing,
}
