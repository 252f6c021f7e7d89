package doctor

import (
	_ "embed"
	"slices"

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
	// SectionAddons holds the image pull and add-on findings (NK75x): what the kubelets' pull
	// limiter turned away, the health of the add-ons every node depends on (aws-node, kube-proxy,
	// CoreDNS), the VPC CNI's, kube-proxy's and CoreDNS's versions against the cluster's, and
	// Karpenter's lease collector.
	SectionAddons = "addons"
	// SectionCNIMetrics holds what each node's ipamd says about itself (aws-node /metrics) and the
	// cause of stuck pods measured there.
	SectionCNIMetrics = "cni-metrics"
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

// The entries of the addons and cni-metrics sections in Sections (their checks' tests report
// them alone).
var (
	sectionAddons     = findings.SectionSpec{Name: SectionAddons, Title: "Image pulls and add-ons"}
	sectionCNIMetrics = findings.SectionSpec{Name: SectionCNIMetrics, Title: "VPC CNI per node (ipamd metrics) and the measured cause of stuck pods"}
)

//go:embed rules.yaml
var rulesFile []byte

// ownRules are the doctor's own rules: their texts are data, in rules.yaml. Codes are stable;
// docs/doctor.md lists them. NK2xx kubelet configuration, NK3xx versions and heartbeats, NK4xx
// aws-node, NK5xx APF, NK7xx pod networking (NK741-NK749 its cni-metrics section), NK75x image
// pulls and add-ons, NK8xx EC2. The node, kubelet and aws-node rules that bundle shares are in
// internal/rules (rules.Rules); doctor reports those too.
var ownRules = findings.MustParseRules(rulesFile, []string{
	SectionKubelet, SectionVersions, SectionHeartbeats, SectionAWSNode, SectionAPF, SectionPodNet,
	SectionEC2, SectionAddons, SectionCNIMetrics,
}, docs, rules.Docs)

// Rules lists doctor's rules, for the catalog (findings.NewCatalog with rules.Rules): its own, and
// the user-data rules doctor --aws runs on launch templates (bootstrap's; NK634 is about a
// bundle's cloud-init log only).
var Rules = slices.Concat(ownRules, []findings.Rule{
	bootstrap.RuleHostname,
	bootstrap.RuleIptablesFlush,
	bootstrap.RuleDocker,
	bootstrap.RuleUserDataUnreadable,
})

// The doctor's own rules by the names the checks use.
var (
	RuleConfigz                 = findings.MustRule(ownRules, "NK205")
	RuleVersionSkew             = findings.MustRule(ownRules, "NK301")
	RuleLegacyLeases            = findings.MustRule(ownRules, "NK302")
	RuleStaleHeartbeat          = findings.MustRule(ownRules, "NK311")
	RuleZombie                  = findings.MustRule(ownRules, "NK312")
	RuleLeaked                  = findings.MustRule(ownRules, "NK313")
	RuleUnowned                 = findings.MustRule(ownRules, "NK314")
	RuleOwnerGone               = findings.MustRule(ownRules, "NK315")
	RuleNoLease                 = findings.MustRule(ownRules, "NK316")
	RuleCustomNoMaxPods         = findings.MustRule(ownRules, "NK409")
	RuleAWSNodeMissing          = findings.MustRule(ownRules, "NK411")
	RuleAPFRejected             = findings.MustRule(ownRules, "NK501")
	RuleAPFUnavailable          = findings.MustRule(ownRules, "NK502")
	RuleSandboxNoAddress        = findings.MustRule(ownRules, "NK701")
	RuleSandboxSubnetExhausted  = findings.MustRule(ownRules, "NK702")
	RuleSandboxIPAMDUnreachable = findings.MustRule(ownRules, "NK703")
	RuleSandboxEC2Throttled     = findings.MustRule(ownRules, "NK704")
	RuleSandboxOther            = findings.MustRule(ownRules, "NK705")
	RuleStuckNoEvent            = findings.MustRule(ownRules, "NK706")
	RuleStuckByNamespace        = findings.MustRule(ownRules, "NK707")
	RuleNodeAtAddressCapacity   = findings.MustRule(ownRules, "NK708")
	RuleENIConfigMissing        = findings.MustRule(ownRules, "NK711")
	RuleENIConfigIncomplete     = findings.MustRule(ownRules, "NK712")
	RuleKarpenterReservedENIs   = findings.MustRule(ownRules, "NK713")
	RuleServingCSRPending       = findings.MustRule(ownRules, "NK721")
	RuleServingCSRForeign       = findings.MustRule(ownRules, "NK722")
	RuleCSINodeOrphaned         = findings.MustRule(ownRules, "NK731")
	RuleCNINodeOrphaned         = findings.MustRule(ownRules, "NK732")
	// NK741-NK749: what each node's ipamd says about itself (the cni-metrics section);
	// NK743-NK747 and NK749 are the measured causes of pods stuck in ContainerCreating on a node: one
	// finding per node with stuck pods, whose fix is that cause's.
	RuleCNIMetricsUnavailable = findings.MustRule(ownRules, "NK741")
	RuleCNIEC2Errors          = findings.MustRule(ownRules, "NK742")
	RuleStuckPoolFull         = findings.MustRule(ownRules, "NK743")
	RuleStuckSubnet           = findings.MustRule(ownRules, "NK744")
	RuleStuckThrottled        = findings.MustRule(ownRules, "NK745")
	RuleStuckIPAMDUnreachable = findings.MustRule(ownRules, "NK746")
	RuleStuckUnknown          = findings.MustRule(ownRules, "NK747")
	RuleCNIIPAMDErrors        = findings.MustRule(ownRules, "NK748")
	RuleStuckLeaked           = findings.MustRule(ownRules, "NK749")
	// NK75x: image pulls and add-ons (the addons section).
	RulePullQPSExceeded      = findings.MustRule(ownRules, "NK751")
	RuleAddonUnavailable     = findings.MustRule(ownRules, "NK752")
	RuleAddonRestarts        = findings.MustRule(ownRules, "NK753")
	RuleCNIVersionForCluster = findings.MustRule(ownRules, "NK754")
	RuleKarpenterLeaseGC     = findings.MustRule(ownRules, "NK755")
	RuleKubeProxyVersion     = findings.MustRule(ownRules, "NK756")
	RuleCoreDNSVersion       = findings.MustRule(ownRules, "NK757")
	// NK8xx: EC2 (doctor --aws, the section in ec2.go).
	RuleInstanceWithoutNode    = findings.MustRule(ownRules, "NK801")
	RuleNodeInstanceGone       = findings.MustRule(ownRules, "NK802")
	RuleSubnetAddressesLow     = findings.MustRule(ownRules, "NK803")
	RuleSubnetPrefixFragmented = findings.MustRule(ownRules, "NK804")
	RuleBootVolumeIOBound      = findings.MustRule(ownRules, "NK805")
)

// stuckCauseNames name the measured causes in the stuck-pod groups of the pod-networking section
// (NK701-NK707), which point at the node's own NK743-NK747 or NK749 finding for the figures and the fix.
var stuckCauseNames = map[string]string{
	RuleStuckPoolFull.Code:         "pool full at maxPods",
	RuleStuckSubnet.Code:           "subnet out of free addresses",
	RuleStuckThrottled.Code:        "EC2 throttling ipamd",
	RuleStuckIPAMDUnreachable.Code: "ipamd unreachable without a ready aws-node pod",
	RuleStuckUnknown.Code:          "cause unknown",
	RuleStuckLeaked.Code:           "pool full of leaked addresses",
}
