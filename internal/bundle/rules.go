package bundle

import (
	_ "embed"
	"slices"

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

//go:embed rules.yaml
var rulesFile []byte

// ownRules are the bundle's own rules (NK6xx): their texts are data, in rules.yaml. Codes are
// stable; docs/bundle.md lists them.
var ownRules = findings.MustParseRules(rulesFile,
	[]string{SectionKubeletLog, SectionCNILog, SectionIO, SectionBootstrap}, docs, rules.Docs, bootstrap.Docs)

// Rules lists bundle's rules, for the catalog (findings.NewCatalog with rules.Rules): its own and
// the user-data rules, internal/bootstrap's, which doctor --aws shares.
var Rules = slices.Concat(ownRules, bootstrap.Rules)

// The bundle's rules by the names the checks use.
var (
	RulePullQPS          = findings.MustRule(ownRules, "NK601")
	RuleLeaseOwner       = findings.MustRule(ownRules, "NK602")
	RuleNodeStatus       = findings.MustRule(ownRules, "NK603")
	RuleEvictionStats    = findings.MustRule(ownRules, "NK604")
	RuleServingCert      = findings.MustRule(ownRules, "NK605")
	RuleIPAMDRefused     = findings.MustRule(ownRules, "NK611")
	RuleIPAMDAPIServer   = findings.MustRule(ownRules, "NK612")
	RuleEC2Throttle      = findings.MustRule(ownRules, "NK613")
	RuleNoAddress        = findings.MustRule(ownRules, "NK614")
	RuleSubnetExhausted  = findings.MustRule(ownRules, "NK615")
	RuleIODelay          = findings.MustRule(ownRules, "NK621")
	RuleBootIODelay      = findings.MustRule(ownRules, "NK622")
	RuleScriptFailed     = findings.MustRule(ownRules, "NK636")
	RuleCommandNotFound  = findings.MustRule(ownRules, "NK637")
	RuleNodeadmFailed    = findings.MustRule(ownRules, "NK638")
	RuleBootstrapRemoved = findings.MustRule(ownRules, "NK639")
	RuleMissing          = findings.MustRule(ownRules, "NK641")
)
