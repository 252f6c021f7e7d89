package bootstrap

import (
	"regexp"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Section is the report section of the user-data rules, in bundle's report and in doctor's.
const Section = "bootstrap"

// Documentation pages the user-data rules link to.
const (
	DocUserData = "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data"
	DocNodeadm  = "https://awslabs.github.io/amazon-eks-ami/nodeadm/"
)

// The user-data rules (NK631-NK635). bundle and doctor both list them; the catalog counts a rule
// listed twice once.
var (
	RuleHostname = findings.Rule{
		Code: "NK631", Name: "user-data-hostname-override", Section: Section, Severity: findings.Warning,
		Title:       "user data overrides the hostname",
		Remediation: "let the node keep its EC2 private DNS name; the Node name, its lease and the AWS cloud provider expect it",
		DocURL:      DocUserData,
	}
	RuleIptablesFlush = findings.Rule{
		Code: "NK632", Name: "user-data-iptables-flush", Section: Section, Severity: findings.Error,
		Title:       "user data flushes iptables",
		Remediation: "remove the flush: it deletes the rules kube-proxy and the VPC CNI program at boot (Service routing, SNAT, pod traffic)",
		DocURL:      DocUserData,
	}
	RuleDocker = findings.Rule{
		Code: "NK633", Name: "user-data-docker-on-containerd", Section: Section, Severity: findings.Warning,
		Title:       "user data manages the Docker service on a node whose runtime is containerd",
		Remediation: "remove the Docker steps from the bootstrap script; containerd is the runtime and a restarted dockerd only adds iptables rules and load",
		DocURL:      DocUserData,
	}
	RuleUserDataUntraced = findings.Rule{
		Code: "NK634", Name: "user-data-not-traced", Section: Section, Severity: findings.Skipped,
		Title:       "the user data's commands are not in cloud-init-output.log",
		Remediation: "the user data runs without `set -x`, so the hostname, iptables and Docker checks (NK631-NK633) could not see its commands: pass the user data itself with --user-data FILE (aws ec2 describe-instance-attribute --attribute userData, or the launch template)",
		DocURL:      DocUserData,
	}
	RuleUserDataUnreadable = findings.Rule{
		Code: "NK635", Name: "user-data-unreadable", Section: Section, Severity: findings.Warning,
		Title:       "a part of the user data could not be read",
		Remediation: "check the MIME structure (boundary, Content-Type of each part) and the NodeConfig YAML; nodeadm and cloud-init skip what they cannot parse, so the node may boot without that part",
		DocURL:      DocNodeadm,
	}
)

// Rules lists the user-data rules, for the catalog.
var Rules = []findings.Rule{RuleHostname, RuleIptablesFlush, RuleDocker, RuleUserDataUntraced, RuleUserDataUnreadable}

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
