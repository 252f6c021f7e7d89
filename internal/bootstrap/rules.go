package bootstrap

import (
	_ "embed"
	"regexp"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Section is the report section of the user-data rules, in bundle's report and in doctor's.
const Section = "bootstrap"

// Docs are the documentation pages the user-data rules link to (the doc keys of rules.yaml);
// bundle's rules about the user data cite them too.
var Docs = findings.DocPages{
	"user-data": "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data",
	"nodeadm":   "https://awslabs.github.io/amazon-eks-ami/nodeadm/",
}

//go:embed rules.yaml
var rulesFile []byte

// Rules lists the user-data rules (NK631-NK635), for the catalog: their texts are data, in
// rules.yaml. bundle and doctor both list them; the catalog counts a rule listed twice once.
var Rules = findings.MustParseRules(rulesFile, []string{Section}, Docs)

// The user-data rules by the names the checks use.
var (
	RuleHostname           = findings.MustRule(Rules, "NK631")
	RuleIptablesFlush      = findings.MustRule(Rules, "NK632")
	RuleDocker             = findings.MustRule(Rules, "NK633")
	RuleUserDataUntraced   = findings.MustRule(Rules, "NK634")
	RuleUserDataUnreadable = findings.MustRule(Rules, "NK635")
)

var (
	// Hostname: hostnamectl set-hostname (also as a cloud-config runcmd list,
	// [hostnamectl, set-hostname, NAME]), hostname NAME, --hostname-override, > /etc/hostname.
	Hostname = regexp.MustCompile(`(?:^|[\s;&|(+'"\[,])(?:hostnamectl['"]?(?:[\s,]+['"]?--[^\s,]+)*[\s,]+['"]?set-hostname['"]?[\s,]+\S+|hostname\s+(?:-b\s+)?[A-Za-z0-9][A-Za-z0-9.-]*\s*$|--hostname-override[= ]\S+|>\s*/etc/hostname\b)`)
	// Flush: iptables or ip6tables (legacy or nft) -F, --flush, -X, --delete-chain.
	Flush = regexp.MustCompile(`(?:^|[\s;&|(+])ip6?tables(?:-legacy|-nft)?\s(?:[^|;&]*\s)?(?:-F|--flush|-X|--delete-chain)(?:\s|$)`)
	// Docker: systemctl or service starting, stopping or enabling docker.
	Docker = regexp.MustCompile(`(?:^|[\s;&|(+])(?:systemctl\s+(?:--\S+\s+)*(?:start|restart|enable|reload|stop|disable|daemon-reload\s.*)(?:\s+--now)?\s+docker(?:\.service|\.socket)?\b|service\s+docker\s+(?:start|restart|stop|reload)\b)`)
)

// LineCheck is one of the command checks run on every line of a bootstrap script (or of its
// trace in cloud-init's output).
type LineCheck struct {
	Rule findings.Rule
	Re   *regexp.Regexp
	// What names the matches in messages ("1 hostname change", "2 hostname changes").
	What findings.Noun
}

// LineChecks are NK631-NK633, in report order.
var LineChecks = []LineCheck{
	{Rule: RuleHostname, Re: Hostname, What: findings.Noun{One: "hostname change", Many: "hostname changes"}},
	{Rule: RuleIptablesFlush, Re: Flush, What: findings.Noun{One: "iptables flush", Many: "iptables flushes"}},
	{Rule: RuleDocker, Re: Docker, What: findings.Noun{One: "Docker service command", Many: "Docker service commands"}},
}
