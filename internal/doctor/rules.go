package doctor

import (
	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Section names (stable: they appear in JSON and JUnit output).
const (
	SectionNodes      = rules.SectionNodes
	SectionKubelet    = rules.SectionKubelet
	SectionVersions   = "versions"
	SectionHeartbeats = "heartbeats"
	SectionAWSNode    = rules.SectionAWSNode
	SectionAPF        = "apf"
	SectionPodNet     = "pod-networking"
)

// Sections lists the doctor's sections in display order with their titles.
var Sections = []findings.SectionSpec{
	{Name: SectionNodes, Title: "Nodes: pod capacity against VPC CNI addresses"},
	{Name: SectionKubelet, Title: "Kubelet configuration (configz)"},
	{Name: SectionVersions, Title: "Kubelet versions"},
	{Name: SectionHeartbeats, Title: "Node heartbeats and leases"},
	{Name: SectionAWSNode, Title: "aws-node (Amazon VPC CNI) settings"},
	{Name: SectionAPF, Title: "API priority and fairness"},
	{Name: SectionPodNet, Title: "Pod networking"},
	sectionAddons,
	sectionCNIMetrics,
}

// The doctor's own rules. Codes are stable; docs/doctor.md lists them. NK2xx kubelet
// configuration, NK3xx versions and heartbeats, NK4xx aws-node, NK5xx APF, NK7xx pod networking,
// NK8xx EC2. The node, kubelet and aws-node rules that bundle shares are in internal/rules
// (rules.Rules); doctor reports those too.
var (
	RuleConfigz = findings.Rule{
		Code: "NK205", Name: "configz-unavailable", Section: SectionKubelet, Severity: findings.Skipped,
		Title:       "kubelet configuration not readable through the API server",
		Remediation: "grant get on nodes/proxy to the caller, and make sure the API server reaches the kubelet (kubelet port open from the control plane)",
		DocURL:      DocConfigz,
	}

	RuleVersionSkew = findings.Rule{
		Code: "NK301", Name: "kubelet-version-skew", Section: SectionVersions, Severity: findings.Error,
		Title:       "kubelet version outside the supported skew with the API server",
		Remediation: "upgrade the node (new AMI / node group version) before the next control plane upgrade; kubelets may be at most three minor versions older than the API server (two before 1.28) and never newer",
		DocURL:      DocVersionSkew,
	}
	RuleLegacyLeases = findings.Rule{
		Code: "NK302", Name: "kubelet-leaks-leases", Section: SectionVersions, Severity: findings.Warning,
		Title:       "kubelet older than 1.29 re-creates its lease without an owner when its Node is deleted",
		Remediation: "upgrade to 1.29+; until then run nodekeeper's lease garbage collection (nodekeeper gc / controller)",
		DocURL:      DocLeaseLeak,
	}

	RuleStaleHeartbeat = findings.Rule{
		Code: "NK311", Name: "stale-heartbeat", Section: SectionHeartbeats, Severity: findings.Warning,
		Title:       "node lease not renewed within its duration (kubelet down or cut off)",
		Remediation: "check the kubelet on the node and its path to the API server; the node lifecycle controller marks the Node Unknown and evicts its pods",
		DocURL:      rules.DocLeases,
	}
	RuleZombie = findings.Rule{
		Code: "NK312", Name: "zombie-kubelet", Section: SectionHeartbeats, Severity: findings.Error,
		Title:       "a kubelet renews its lease but its Node object is gone",
		Remediation: "terminate the instance (or restart its kubelet so it re-registers); deleting the lease does not help, the kubelet re-creates it",
		DocURL:      DocLeaseLeak,
	}
	RuleLeaked = findings.Rule{
		Code: "NK313", Name: "leaked-lease", Section: SectionHeartbeats, Severity: findings.Warning,
		Title:       "node lease without Node or owner, not renewed for longer than the grace period",
		Remediation: "delete leaked leases safely with nodekeeper gc (or run nodekeeper controller)",
		DocURL:      DocLeaseLeak,
	}
	RuleUnowned = findings.Rule{
		Code: "NK314", Name: "unowned-lease", Section: SectionHeartbeats, Severity: findings.Info,
		Title:       "node lease without ownerReference (it would outlive its Node)",
		Remediation: "nodekeeper controller adopts such leases so the garbage collector removes them with their Node",
		DocURL:      rules.DocLeases,
	}
	RuleOwnerGone = findings.Rule{
		Code: "NK315", Name: "lease-owner-gone", Section: SectionHeartbeats, Severity: findings.Info,
		Title:       "node lease owned by a Node that no longer exists (or by an earlier Node of the same name)",
		Remediation: "nothing to do if kube-controller-manager's garbage collector runs; it removes the lease",
		DocURL:      rules.DocLeases,
	}
	RuleNoLease = findings.Rule{
		Code: "NK316", Name: "node-without-lease", Section: SectionHeartbeats, Severity: findings.Warning,
		Title:       "Node without a heartbeat lease",
		Remediation: "the kubelet has not registered its lease yet or cannot write it; check the kubelet log for lease errors",
		DocURL:      rules.DocLeases,
	}

	RuleCustomNoMaxPods = findings.Rule{
		Code: "NK409", Name: "custom-networking-max-pods", Section: SectionAWSNode, Severity: findings.Error,
		Title:       "custom networking enabled but nodes allow more pods than it leaves addresses for",
		Remediation: "with custom networking the primary ENI carries no pod addresses and neither the AMI's nor nodeadm's computed value knows it: set max pods explicitly (AL2 bootstrap.sh --use-max-pods false --kubelet-extra-args '--max-pods=N', AL2023 NodeConfig spec.kubelet.config.maxPods, Bottlerocket settings.kubernetes.max-pods, Karpenter reservedENIs: 1 or EC2NodeClass spec.kubelet.maxPods, managed node groups through a launch template with an AMI ID); the NK101 findings name N and the fix for each node",
		DocURL:      DocCustomNetworking,
	}
	RuleAWSNodeMissing = findings.Rule{
		Code: "NK411", Name: "aws-node-not-found", Section: SectionAWSNode, Severity: findings.Info,
		Title:       "no aws-node DaemonSet: VPC CNI checks do not apply",
		Remediation: "nothing to do on clusters without the Amazon VPC CNI; pass --custom-networking/--prefix-delegation to check capacity anyway",
		DocURL:      rules.DocCNIVars,
	}

	RuleAPFRejected = findings.Rule{
		Code: "NK501", Name: "apf-rejected-requests", Section: SectionAPF, Severity: findings.Warning,
		Title:       "the API server rejected requests (HTTP 429) under API priority and fairness",
		Remediation: "find the flow schema's clients (audit log, nodekeeper audit) and lower their request rate, or give the priority level more shares; scale-ups of many nodes hit workload-low and global-default first",
		DocURL:      DocAPF,
	}
	RuleAPFUnavailable = findings.Rule{
		Code: "NK502", Name: "apf-metrics-unavailable", Section: SectionAPF, Severity: findings.Skipped,
		Title:       "API server metrics not readable",
		Remediation: "grant get on the non-resource URL /metrics (for example the system:monitoring ClusterRole)",
		DocURL:      DocAPF,
	}

	RuleSandboxNoAddress = findings.Rule{
		Code: "NK701", Name: "sandbox-no-ip-address", Section: SectionPodNet, Severity: findings.Error,
		Title:       "pods stuck in ContainerCreating: the VPC CNI could not assign an IP address on the node",
		Remediation: "ipamd had no free address for the node: if NK708 names the node it is at its address capacity (lower maxPods, see its fix); otherwise ipamd could not grow its pool (subnet free addresses, EC2 throttling, WARM_ENI_TARGET/MINIMUM_IP_TARGET) - read /var/log/aws-routed-eni/ipamd.log on the node (nodekeeper bundle)",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleSandboxSubnetExhausted = findings.Rule{
		Code: "NK702", Name: "sandbox-subnet-exhausted", Section: SectionPodNet, Severity: findings.Error,
		Title:       "pods stuck in ContainerCreating: the subnet has no free addresses (InsufficientFreeAddressesInSubnet)",
		Remediation: "free or add addresses: larger or more subnets, a secondary VPC CIDR with custom networking (ENIConfig per zone), lower WARM_IP_TARGET/WARM_ENI_TARGET so nodes do not hoard addresses; with prefix delegation the subnet needs free contiguous /28 blocks (subnet CIDR reservations)",
		DocURL:      rules.DocIPOptimization,
	}
	RuleSandboxIPAMDUnreachable = findings.Rule{
		Code: "NK703", Name: "sandbox-ipamd-unreachable", Section: SectionPodNet, Severity: findings.Error,
		Title:       "pods stuck in ContainerCreating: the CNI plugin could not reach ipamd (127.0.0.1:50051 connection refused)",
		Remediation: "aws-node is not running or not ready on the node: check its pod and log (ipamd cannot reach the API server before kube-proxy programs iptables - set CLUSTER_ENDPOINT, NK401; slow EBS at boot delays it); the kubelet retries the sandbox once ipamd serves",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleSandboxEC2Throttled = findings.Rule{
		Code: "NK704", Name: "sandbox-ec2-throttled", Section: SectionPodNet, Severity: findings.Warning,
		Title:       "pods stuck in ContainerCreating: EC2 throttled the VPC CNI's API calls",
		Remediation: "keep a warm pool (WARM_ENI_TARGET=1 or MINIMUM_IP_TARGET, NK404/NK405) so scale-ups do not call AssignPrivateIpAddresses/CreateNetworkInterface per pod, stagger node launches, and ask for a higher EC2 API rate quota",
		DocURL:      rules.DocEC2Throttling,
	}
	RuleSandboxOther = findings.Rule{
		Code: "NK705", Name: "sandbox-failed-other", Section: SectionPodNet, Severity: findings.Warning,
		Title:       "pods stuck in ContainerCreating: sandbox creation failed for another reason",
		Remediation: "read the quoted message: it comes from the container runtime or the CNI plugin on the node (nodekeeper bundle collects their logs)",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleStuckNoEvent = findings.Rule{
		Code: "NK706", Name: "stuck-without-sandbox-event", Section: SectionPodNet, Severity: findings.Warning,
		Title:       "pods stuck in ContainerCreating without a sandbox failure event",
		Remediation: "kubectl describe the pod: volume attach/mount waits, image pulls of init containers and a slow container runtime also hold pods here; events older than the API server's event TTL (1h) are gone",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleStuckByNamespace = findings.Rule{
		Code: "NK707", Name: "stuck-pods-by-namespace", Section: SectionPodNet, Severity: findings.Info,
		Title:       "stuck pods per namespace",
		Remediation: "the node and cause findings above say what to change; this groups the same pods by owner team",
		DocURL:      rules.DocCNITroubleshooting,
	}
	RuleNodeAtAddressCapacity = findings.Rule{
		Code: "NK708", Name: "node-at-address-capacity", Section: SectionPodNet, Severity: findings.Error,
		Title:       "node out of VPC addresses while its kubelet admits more pods: new pods wait in ContainerCreating",
		Remediation: "lower the node's maxPods to its address capacity (the evidence names the fix for its OS and provisioner) or raise the capacity (prefix delegation on Nitro, larger instance types)",
		DocURL:      rules.DocMaxPods,
	}

	RuleENIConfigMissing = findings.Rule{
		Code: "NK711", Name: "eniconfig-missing", Section: SectionPodNet, Severity: findings.Error,
		Title:       "node selects an ENIConfig that does not exist: with custom networking its pods get no addresses",
		Remediation: "create the ENIConfig (crd.k8s.amazonaws.com/v1alpha1, named after the zone or the node's k8s.amazonaws.com/eniConfig label) with the pod subnet and security groups, or fix the node's label; then replace the node (ipamd reads the ENIConfig at start)",
		DocURL:      DocENIConfig,
	}
	RuleENIConfigIncomplete = findings.Rule{
		Code: "NK712", Name: "eniconfig-incomplete", Section: SectionPodNet, Severity: findings.Error,
		Title:       "ENIConfig without a subnet or without security groups",
		Remediation: "set spec.subnet to the pod subnet of the ENIConfig's zone (without it ipamd cannot create pod ENIs) and spec.securityGroups (without them the pod ENIs get the VPC's default security group, not the node's)",
		DocURL:      DocENIConfig,
	}
	RuleKarpenterReservedENIs = findings.Rule{
		Code: "NK713", Name: "karpenter-reserved-enis", Section: SectionPodNet, Severity: findings.Error,
		Title:       "custom networking on but Karpenter reserves no ENI: it gives its nodes max pods for addresses they do not have",
		Remediation: "set Karpenter's reservedENIs to 1 (Helm settings.reservedENIs / RESERVED_ENIS; before v0.33 aws.reservedENIs in the karpenter-global-settings ConfigMap) and let Karpenter replace drifted nodes",
		DocURL:      DocKarpenterENIs,
	}

	RuleServingCSRPending = findings.Rule{
		Code: "NK721", Name: "kubelet-serving-csr-pending", Section: SectionPodNet, Severity: findings.Error,
		Title:       "kubelet serving certificate request not approved: logs, exec and metrics to the node fail (\"no serving certificate available for the kubelet\")",
		Remediation: "EKS signs kubernetes.io/kubelet-serving requests only for DNS and IP names it can verify against the node's EC2 instance (its private DNS name and IPs); others stay pending or approved-but-unsigned: do not hard-code the hostname or --hostname-override in the bootstrap script (NK631), then replace the node; approving by hand (kubectl certificate approve) only helps until the next rotation",
		DocURL:      DocKubeletCSR,
	}

	RuleServingCSRForeign = findings.Rule{
		Code: "NK722", Name: "kubelet-serving-csr-not-from-kubelet", Section: SectionPodNet, Severity: findings.Info,
		Title:       "kubelet-serving certificate request from a requester that is not a kubelet",
		Remediation: "a kubelet asks as system:node:NAME in group system:nodes; a kubernetes.io/kubelet-serving request from anyone else serves no node: find out who sent it (the CSR's spec.username) and why, then deny or delete it (kubectl certificate deny / kubectl delete csr); the CSR cleaner removes it after a day",
		DocURL:      DocKubeletCSR,
	}

	RuleCSINodeOrphaned = findings.Rule{
		Code: "NK731", Name: "csinode-without-node", Section: SectionPodNet, Severity: findings.Warning,
		Title:       "CSINode whose Node is gone",
		Remediation: "owned: the garbage collector removes it with its Node (nothing to do if kube-controller-manager runs); unowned or leaked: a kubelet re-created it or the Node was replaced - delete it by hand after checking no instance of that name runs; nodekeeper never deletes it",
		DocURL:      DocCSINode,
	}
	RuleCNINodeOrphaned = findings.Rule{
		Code: "NK732", Name: "cninode-without-node", Section: SectionPodNet, Severity: findings.Warning,
		Title:       "CNINode (vpcresources.k8s.aws) whose Node is gone",
		Remediation: "owned: the garbage collector removes it with its Node; unowned or leaked: the VPC resource controller left it - delete it by hand after checking no instance of that name runs; nodekeeper never deletes it",
		DocURL:      rules.DocCNITroubleshooting,
	}

	// NK8xx: EC2 (doctor --aws, the section in ec2.go).
	RuleInstanceWithoutNode = findings.Rule{
		Code: "NK801", Name: "instance-without-node", Section: SectionEC2, Severity: findings.Warning,
		Title:       "EC2 instance of the cluster running without a Node",
		Remediation: "find out whether it is a zombie kubelet (nodekeeper audit --cloudwatch names kubelets calling after their Node's deletion) or a node that never joined (bootstrap, IAM role, aws-auth/access entry), then terminate it or let it join; it is billed either way",
		DocURL:      DocNodeLifecycle,
	}
	RuleNodeInstanceGone = findings.Rule{
		Code: "NK802", Name: "node-instance-gone", Section: SectionEC2, Severity: findings.Warning,
		Title:       "Node whose EC2 instance is terminated, stopped or missing",
		Remediation: "the cloud node lifecycle controller should delete such Nodes: check the cloud controller manager (EKS: the control plane) and its permissions; delete the Node once you are sure the machine is gone",
		DocURL:      DocNodeLifecycle,
	}
	RuleSubnetAddressesLow = findings.Rule{
		Code: "NK803", Name: "subnet-addresses-low", Section: SectionEC2, Severity: findings.Warning,
		Title:       "subnet of the nodes (or of their pods, with custom networking) with fewer free addresses than a node needs",
		Remediation: "add subnets (or a secondary CIDR with custom networking) for nodes and pods, lower WARM_IP_TARGET/WARM_ENI_TARGET, or move pods to prefix delegation in a subnet with free /28s",
		DocURL:      rules.DocIPOptimization,
	}
	RuleSubnetPrefixFragmented = findings.Rule{
		Code: "NK804", Name: "subnet-prefix-fragmentation", Section: SectionEC2, Severity: findings.Warning,
		Title:       "prefix delegation in a subnet where a free /28 is unlikely",
		Remediation: "prefix delegation needs 16 contiguous, aligned free addresses per prefix: reserve a CIDR block for prefixes (subnet CIDR reservation) or use a new subnet for nodes",
		DocURL:      rules.DocPrefixDelegation,
	}
	RuleBootVolumeIOBound = findings.Rule{
		Code: "NK805", Name: "boot-volume-io-bound", Section: SectionEC2, Severity: findings.Warning,
		Title:       "Node launched within --boot-window whose root volume was IO-bound (at its IOPS or throughput limit, or out of gp2 burst credits); error when pods are stuck in ContainerCreating on it",
		Remediation: "give root volumes the IOPS and throughput a boot needs (gp3 with provisioned IOPS/throughput in the launch template or Karpenter EC2NodeClass blockDeviceMappings; gp2 only bursts to 3,000 IOPS while credits last), put images on a separate data volume, or pull less at boot (smaller images, fewer DaemonSets, lazy loading)",
		DocURL:      DocEBSVolumeTypes,
	}
)

// Rules lists doctor's own rules, for the catalog (findings.NewCatalog with rules.Rules).
var Rules = []findings.Rule{
	RuleConfigz,
	RuleVersionSkew,
	RuleLegacyLeases,
	RuleStaleHeartbeat,
	RuleZombie,
	RuleLeaked,
	RuleUnowned,
	RuleOwnerGone,
	RuleNoLease,
	RuleCustomNoMaxPods,
	RuleAWSNodeMissing,
	RuleAPFRejected,
	RuleAPFUnavailable,
	RuleSandboxNoAddress,
	RuleSandboxSubnetExhausted,
	RuleSandboxIPAMDUnreachable,
	RuleSandboxEC2Throttled,
	RuleSandboxOther,
	RuleStuckNoEvent,
	RuleStuckByNamespace,
	RuleNodeAtAddressCapacity,
	RuleENIConfigMissing,
	RuleENIConfigIncomplete,
	RuleKarpenterReservedENIs,
	RuleServingCSRPending,
	RuleServingCSRForeign,
	RuleCSINodeOrphaned,
	RuleCNINodeOrphaned,
	RuleCNIMetricsUnavailable,
	RuleCNIEC2Errors,
	RuleStuckPoolFull,
	RuleStuckSubnet,
	RuleStuckThrottled,
	RuleStuckIPAMDUnreachable,
	RuleStuckUnknown,
	RuleCNIIPAMDErrors,
	RuleInstanceWithoutNode,
	RuleNodeInstanceGone,
	RuleSubnetAddressesLow,
	RuleSubnetPrefixFragmented,
	RuleBootVolumeIOBound,
	// NK75x: image pulls and add-ons (rules_addons.go).
	RulePullQPSExceeded,
	RuleAddonUnavailable,
	RuleAddonRestarts,
	RuleCNIVersionForCluster,
	RuleKarpenterLeaseGC,
	// The user-data rules doctor --aws runs on launch templates (bootstrap's; NK634 is about a
	// bundle's cloud-init log only).
	bootstrap.RuleHostname,
	bootstrap.RuleIptablesFlush,
	bootstrap.RuleDocker,
	bootstrap.RuleUserDataUnreadable,
}
