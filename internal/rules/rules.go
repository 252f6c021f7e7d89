// Package rules holds the node rules that doctor (a live cluster) and bundle (an EKS logs
// collector bundle) share: the kubelet configuration (kubelet.go), the Amazon VPC CNI settings
// (cni.go), pod capacity against the addresses the VPC CNI can give (capacity.go) and the max-pods
// fix per node OS and provisioner (remediation.go). Each is a pure function from what was read to
// findings, so a setting is judged the same way whether it came from the API server or a file.
// Rules is the list of the rules they produce; doctor and bundle add their own lists to it in the
// catalog the CLI builds (findings.NewCatalog).
package rules

import (
	_ "embed"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Section names of the shared rules (stable: they appear in JSON and JUnit output).
const (
	SectionNodes   = "nodes"
	SectionKubelet = "kubelet"
	SectionAWSNode = "aws-node"
)

//go:embed rules.yaml
var rulesFile []byte

// Rules lists the shared rules, for the catalog: their texts are data, in rules.yaml. Codes are
// stable; docs/doctor.md lists them. NK1xx nodes, NK2xx kubelet configuration, NK4xx aws-node.
var Rules = findings.MustParseRules(rulesFile, []string{SectionNodes, SectionKubelet, SectionAWSNode}, Docs)

// The shared rules by the names the checks use.
var (
	RuleMaxPodsAboveIPs = findings.MustRule(Rules, "NK101")
	RuleMaxPodsBelow    = findings.MustRule(Rules, "NK102")
	RuleInstanceUnknown = findings.MustRule(Rules, "NK103")
	RulePrefixNotNitro  = findings.MustRule(Rules, "NK104")
	RuleRegistryPullQPS = findings.MustRule(Rules, "NK201")
	RuleSerializePulls  = findings.MustRule(Rules, "NK202")
	RuleKubeAPIQPS      = findings.MustRule(Rules, "NK203")
	RuleMaxPodsMismatch = findings.MustRule(Rules, "NK204")
	RuleClusterEndpoint = findings.MustRule(Rules, "NK401")
	RulePDNoTarget      = findings.MustRule(Rules, "NK402")
	RuleTargetIgnored   = findings.MustRule(Rules, "NK403")
	RuleNoWarmPool      = findings.MustRule(Rules, "NK404")
	RuleWarmIPLow       = findings.MustRule(Rules, "NK405")
	RuleInvalidSetting  = findings.MustRule(Rules, "NK406")
	RuleCooldownInvalid = findings.MustRule(Rules, "NK407")
	RuleCooldownZero    = findings.MustRule(Rules, "NK408")
	RuleCNIOld          = findings.MustRule(Rules, "NK410")
	RuleEnvNotRead      = findings.MustRule(Rules, "NK412")
)
