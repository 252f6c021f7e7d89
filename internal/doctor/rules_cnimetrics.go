package doctor

import (
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// SectionCNIMetrics holds what each node's ipamd says about itself (aws-node /metrics) and the
// cause of stuck pods measured there.
const SectionCNIMetrics = "cni-metrics"

var sectionCNIMetrics = findings.SectionSpec{Name: SectionCNIMetrics, Title: "VPC CNI per node (ipamd metrics) and the measured cause of stuck pods"}

// The rules of the section, NK741-NK749. NK743-NK747 are the measured causes of pods stuck in
// ContainerCreating on a node: one finding per node with stuck pods, whose fix is that cause's.
var (
	RuleCNIMetricsUnavailable = findings.Rule{
		Code: "NK741", Name: "cni-metrics-unavailable", Section: SectionCNIMetrics, Severity: findings.Skipped,
		Title:       "aws-node (ipamd) metrics not readable through the API server",
		Remediation: "grant get on pods/proxy in the aws-node namespace and list on pods there; make sure the API server reaches the node on ipamd's metrics port (61678, containerPort \"metrics\") and that DISABLE_METRICS is not true",
		DocURL:      DocCNIMetrics,
	}
	RuleCNIEC2Errors = findings.Rule{
		Code: "NK742", Name: "cni-ec2-api-errors", Section: SectionCNIMetrics, Severity: findings.Info,
		Title:       "ipamd counted EC2 API errors on the node since it started",
		Remediation: "RequestLimitExceeded: keep a warm pool (WARM_ENI_TARGET, MINIMUM_IP_TARGET) and stagger node launches; InsufficientFreeAddressesInSubnet: free or add subnet addresses; UnauthorizedOperation (a warning): the node role or IRSA role of aws-node lacks the AmazonEKS_CNI_Policy actions",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleStuckPoolFull = findings.Rule{
		Code: "NK743", Name: "stuck-cause-pool-full", Section: SectionCNIMetrics, Severity: findings.Error,
		Title:       "pods stuck on the node: ipamd's address pool is at the instance's maximum while the kubelet admits more pods",
		Remediation: "lower the node's maxPods to the addresses ipamd can hold (the evidence names the value and the fix for the node's OS and provisioner), or raise what it can hold: prefix delegation on Nitro instances, a larger instance type",
		DocURL:      rules.DocMaxPods,
	}
	RuleStuckSubnet = findings.Rule{
		Code: "NK744", Name: "stuck-cause-subnet-exhausted", Section: SectionCNIMetrics, Severity: findings.Error,
		Title:       "pods stuck on the node: EC2 refuses ipamd addresses, the subnet has none free (InsufficientFreeAddressesInSubnet)",
		Remediation: "free or add addresses in the node's (or, with custom networking, the ENIConfig's) subnet: larger or more subnets, a secondary VPC CIDR with custom networking, lower WARM_IP_TARGET/WARM_ENI_TARGET so nodes do not hoard addresses; with prefix delegation the subnet needs free contiguous /28 blocks",
		DocURL:      rules.DocIPOptimization,
	}
	RuleStuckThrottled = findings.Rule{
		Code: "NK745", Name: "stuck-cause-ec2-throttled", Section: SectionCNIMetrics, Severity: findings.Error,
		Title:       "pods stuck on the node: EC2 throttles ipamd (RequestLimitExceeded)",
		Remediation: "ipamd waits and retries: keep a warm pool (WARM_ENI_TARGET=1 or MINIMUM_IP_TARGET) so scale-ups do not call AssignPrivateIpAddresses/CreateNetworkInterface per pod, stagger node launches, find the account's other EC2 callers (CloudTrail), and ask for a higher EC2 API rate quota",
		DocURL:      rules.DocEC2Throttling,
	}
	RuleStuckIPAMDUnreachable = findings.Rule{
		Code: "NK746", Name: "stuck-cause-aws-node-not-ready", Section: SectionCNIMetrics, Severity: findings.Error,
		Title:       "pods stuck on the node while its aws-node pod is missing or not ready: nothing serves the CNI plugin's address requests",
		Remediation: "find why aws-node does not run or is not ready on the node (kubectl describe pod and its aws-node and aws-vpc-cni-init logs; DaemonSet tolerations and node selector when it is missing): at boot ipamd needs the API server, through kube-proxy's rules unless CLUSTER_ENDPOINT is set (NK401), and its IAM permissions; the kubelet retries the sandboxes once ipamd serves",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleStuckUnknown = findings.Rule{
		Code: "NK747", Name: "stuck-cause-unknown", Section: SectionCNIMetrics, Severity: findings.Warning,
		Title:       "pods stuck on the node, and ipamd's figures show no address problem",
		Remediation: "the node's ipamd has addresses and no EC2 error that explains it: read the pods' events (volume attach, image pulls of init containers, the container runtime) and the node's CNI logs (nodekeeper bundle); the evidence quotes what ipamd reported",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleCNIIPAMDErrors = findings.Rule{
		Code: "NK748", Name: "cni-ipamd-errors", Section: SectionCNIMetrics, Severity: findings.Info,
		Title:       "ipamd counted failures of its own, or pod address requests it had no address for, since it started",
		Remediation: "a few after a scale-up are normal while the pool grows; many, or a no-address count that keeps rising, mean the pool cannot grow: read /var/log/aws-routed-eni/ipamd.log on the node (nodekeeper bundle)",
		DocURL:      rules.DocCNITroubleshooting,
	}
)

// DocCNIMetrics describes ipamd's metrics and the CNI metrics helper that publishes them.
const DocCNIMetrics = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/cmd/cni-metrics-helper/README.md"

// stuckCauseNames name the measured causes in the stuck-pod groups of the pod-networking section
// (NK701-NK707), which point at the node's own NK743-NK747 finding for the figures and the fix.
var stuckCauseNames = map[string]string{
	RuleStuckPoolFull.Code:         "pool full at maxPods",
	RuleStuckSubnet.Code:           "subnet out of free addresses",
	RuleStuckThrottled.Code:        "EC2 throttling ipamd",
	RuleStuckIPAMDUnreachable.Code: "ipamd unreachable without a ready aws-node pod",
	RuleStuckUnknown.Code:          "cause unknown",
}
