package bundle

import (
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Bundle sections; the configuration sections reuse the doctor's names and rules.
const (
	SectionKubeletLog = "kubelet-log"
	SectionCNILog     = "cni-log"
	SectionIO         = "io"
	SectionBootstrap  = "bootstrap"
)

// Sections in display order.
var Sections = [][2]string{
	{SectionKubeletLog, "Kubelet log"},
	{SectionCNILog, "VPC CNI logs (ipamd, plugin)"},
	{SectionIO, "Block IO delay"},
	{SectionBootstrap, "Bootstrap user data"},
	{doctor.SectionNodes, "Pod capacity against VPC CNI addresses"},
	{doctor.SectionKubelet, "Kubelet configuration"},
	{doctor.SectionAWSNode, "aws-node (Amazon VPC CNI) settings"},
}

const (
	docCollector   = "https://github.com/awslabs/amazon-eks-ami/tree/main/log-collector-script/linux"
	docCNITrouble  = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/troubleshooting.md"
	docEC2Throttle = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
	docEBSPerf     = "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html"
	docUserData    = "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data"
	docKubeletCfg  = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/"
	docLeases      = "https://kubernetes.io/docs/concepts/architecture/leases/#node-heart-beats"
)

// The bundle's own rules (NK6xx).
var (
	RulePullQPS = findings.Define(findings.Rule{
		Code: "NK601", Name: "image-pull-qps-exceeded", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "image pulls failed with \"pull QPS exceeded\"",
		Remediation: "raise the kubelet's registryPullQPS (for example 50) and registryBurst; pods retry with back-off meanwhile (ErrImagePull, ImagePullBackOff)",
		DocURL:      docKubeletCfg,
	})
	RuleLeaseOwner = findings.Define(findings.Rule{
		Code: "NK602", Name: "lease-owner-ref-failed", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet could not get its Node to set the owner of its lease",
		Remediation: "a few lines at boot precede the Node's registration; lines that continue mean the Node was deleted while the kubelet runs (a zombie) or the kubelet cannot read it: check with nodekeeper leases",
		DocURL:      docLeases,
	})
	RuleNodeStatus = findings.Define(findings.Rule{
		Code: "NK603", Name: "node-status-update-failed", Section: SectionKubeletLog, Severity: findings.Warning,
		Title:       "the kubelet could not update its node status",
		Remediation: "check the node's path to the API server and API server throttling (429); a Node that stops reporting goes NotReady",
		DocURL:      docLeases,
	})
	RuleIPAMDRefused = findings.Define(findings.Rule{
		Code: "NK611", Name: "ipamd-connection-refused", Section: SectionCNILog, Severity: findings.Error,
		Title:       "the CNI plugin could not reach ipamd (127.0.0.1:50051 / ipamd.sock): pods stay in ContainerCreating",
		Remediation: "ipamd was not up: look for its start-up errors (API server unreachable, invalid settings) in ipamd.log; set CLUSTER_ENDPOINT so it does not wait for kube-proxy",
		DocURL:      docCNITrouble,
	})
	RuleIPAMDAPIServer = findings.Define(findings.Rule{
		Code: "NK612", Name: "ipamd-api-server-unreachable", Section: SectionCNILog, Severity: findings.Error,
		Title:       "ipamd could not reach the API server",
		Remediation: "set CLUSTER_ENDPOINT on aws-node (ipamd then does not depend on kube-proxy's iptables rules at boot) and check security groups between nodes and the control plane",
		DocURL:      docCNITrouble,
	})
	RuleEC2Throttle = findings.Define(findings.Rule{
		Code: "NK613", Name: "ec2-api-throttling", Section: SectionCNILog, Severity: findings.Warning,
		Title:       "EC2 API throttling (RequestLimitExceeded / ThrottlingException)",
		Remediation: "keep warm pools (WARM_ENI_TARGET, MINIMUM_IP_TARGET) so scale-ups need fewer EC2 calls, spread node launches, and ask for higher EC2 API rate quotas",
		DocURL:      docEC2Throttle,
	})
	RuleIODelay = findings.Define(findings.Rule{
		Code: "NK621", Name: "block-io-delay", Section: SectionIO, Severity: findings.Warning,
		Title:       "processes spent long waiting for block IO (EBS throttling)",
		Remediation: "give the root volume more IOPS/throughput (gp3) or move container state (/var/lib/containerd, /var/lib/kubelet) to its own volume; the CNI binary and kubelet run from the root volume",
		DocURL:      docEBSPerf,
	})
	RuleHostname = findings.Define(findings.Rule{
		Code: "NK631", Name: "user-data-hostname-override", Section: SectionBootstrap, Severity: findings.Warning,
		Title:       "user data overrides the hostname",
		Remediation: "let the node keep its EC2 private DNS name; the Node name, its lease and the AWS cloud provider expect it",
		DocURL:      docUserData,
	})
	RuleIptablesFlush = findings.Define(findings.Rule{
		Code: "NK632", Name: "user-data-iptables-flush", Section: SectionBootstrap, Severity: findings.Error,
		Title:       "user data flushes iptables",
		Remediation: "remove the flush: it deletes the rules kube-proxy and the VPC CNI program at boot (Service routing, SNAT, pod traffic)",
		DocURL:      docUserData,
	})
	RuleDocker = findings.Define(findings.Rule{
		Code: "NK633", Name: "user-data-docker-on-containerd", Section: SectionBootstrap, Severity: findings.Warning,
		Title:       "user data manages the Docker service on a node whose runtime is containerd",
		Remediation: "remove the Docker steps from the bootstrap script; containerd is the runtime and a restarted dockerd only adds iptables rules and load",
		DocURL:      docUserData,
	})
	RuleMissing = findings.Define(findings.Rule{
		Code: "NK641", Name: "bundle-input-missing", Section: SectionKubeletLog, Severity: findings.Skipped,
		Title:       "a file these checks read is not in the bundle",
		Remediation: "collect the bundle with a current eks-log-collector.sh, as root, without --ignore_introspection",
		DocURL:      docCollector,
	})
)
