package doctor

import "strings"

// SandboxCause is why the kubelet could not create a pod's sandbox, read from the message of a
// FailedCreatePodSandBox event. The kubelet writes "Failed to create pod sandbox: " and the
// container runtime's error, which quotes the CNI plugin's error; the VPC CNI plugin's errors are
// fixed strings (cmd/routed-eni-cni-plugin/cni.go in amazon-vpc-cni-k8s) and ipamd passes EC2
// error codes through (pkg/ipamd/ipamd.go).
type SandboxCause string

// Sandbox failure causes (stable: they appear in JSON output).
const (
	// CauseIPAMNoAddress: ipamd answered but had no address for the pod on this node.
	CauseIPAMNoAddress SandboxCause = "ipam-no-address"
	// CauseSubnetExhausted: EC2 refused addresses because the subnet has no free ones.
	CauseSubnetExhausted SandboxCause = "subnet-exhausted"
	// CauseIPAMDUnreachable: the plugin could not reach ipamd (gRPC 127.0.0.1:50051 or its socket).
	CauseIPAMDUnreachable SandboxCause = "ipamd-unreachable"
	// CauseEC2Throttled: EC2 throttled the VPC CNI's API calls.
	CauseEC2Throttled SandboxCause = "ec2-throttled"
	// CauseOther: any other sandbox failure, reported verbatim.
	CauseOther SandboxCause = "other"
	// CauseNoEvent: a pod stuck in ContainerCreating without a sandbox failure event (volumes,
	// a slow runtime, or events already expired).
	CauseNoEvent SandboxCause = "no-event"
)

// ClassifySandboxMessage sorts one FailedCreatePodSandBox message into a cause. More specific
// causes win: a message that names InsufficientFreeAddressesInSubnet is subnet exhaustion even
// though it also says the address could not be assigned.
func ClassifySandboxMessage(msg string) SandboxCause {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "insufficientfreeaddressesinsubnet") || strings.Contains(m, "insufficientcidrblocks"):
		return CauseSubnetExhausted
	case strings.Contains(m, "requestlimitexceeded") || strings.Contains(m, "throttling") || strings.Contains(m, "rate exceeded"):
		return CauseEC2Throttled
	case (strings.Contains(m, "127.0.0.1:50051") || strings.Contains(m, "ipamd.sock")) &&
		(strings.Contains(m, "connection refused") || strings.Contains(m, "no such file") || strings.Contains(m, "error while dialing")):
		return CauseIPAMDUnreachable
	case strings.Contains(m, "failed to assign an ip address to container"):
		return CauseIPAMNoAddress
	}
	return CauseOther
}

// Title of a cause for people.
func (c SandboxCause) String() string {
	switch c {
	case CauseIPAMNoAddress:
		return "the VPC CNI had no address for the pod on its node"
	case CauseSubnetExhausted:
		return "the subnet has no free addresses"
	case CauseIPAMDUnreachable:
		return "ipamd unreachable"
	case CauseEC2Throttled:
		return "EC2 API throttled"
	case CauseOther:
		return "other sandbox failure"
	case CauseNoEvent:
		return "no sandbox failure event"
	}
	return string(c)
}
