package doctor

import (
	"fmt"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodekeeper/nodekeeper/internal/instances"
)

// An instance running without a Node (NK801) is reported end to end: who deleted its Node and
// when (from --audit-log), its Auto Scaling group, and the one command that removes it safely.
// nodekeeper never runs that command: terminating a machine is the operator's decision.

// deletionOf is the newest deletion of the Node an instance had: the Node is named after the
// instance's private DNS name (EKS's default), or after its ID (resource-name hostnames,
// i-0abc.REGION.compute.internal).
func deletionOf(inst ec2types.Instance, deletions []NodeDeletion) (NodeDeletion, bool) {
	dns, id := strDeref(inst.PrivateDnsName), strDeref(inst.InstanceId)
	var newest NodeDeletion
	found := false
	for _, d := range deletions {
		match := (dns != "" && d.Node == dns) || (id != "" && (d.Node == id || strings.HasPrefix(d.Node, id+".")))
		if match && (!found || d.Time.After(newest.Time)) {
			newest, found = d, true
		}
	}
	return newest, found
}

// removeCommand is the AWS CLI command that removes the instance without side effects: an
// instance of an Auto Scaling group is terminated through the group with its desired capacity
// lowered, so that the group does not launch a replacement for a machine nobody used; any
// other instance is terminated directly.
func removeCommand(inst ec2types.Instance, region string) string {
	id := strDeref(inst.InstanceId)
	var cmd string
	if asg := instances.TagValue(inst.Tags, TagAutoScalingGroup); asg != "" {
		cmd = "aws autoscaling terminate-instance-in-auto-scaling-group --instance-id " + id + " --should-decrement-desired-capacity"
	} else {
		cmd = "aws ec2 terminate-instances --instance-ids " + id
	}
	if region != "" {
		cmd += " --region " + region
	}
	return cmd
}

// zombieReport is the evidence and remediation of one NK801 finding.
func zombieReport(inst ec2types.Instance, in EC2Inputs) (evidence []string, remediation string) {
	if asg := instances.TagValue(inst.Tags, TagAutoScalingGroup); asg != "" {
		evidence = append(evidence, "Auto Scaling group "+asg)
	} else {
		evidence = append(evidence, "not in an Auto Scaling group")
	}
	if in.AuditLog {
		if d, ok := deletionOf(inst, in.Deletions); ok {
			who := d.User
			if d.UserAgent != "" {
				who += " (" + d.UserAgent + ")"
			}
			evidence = append(evidence, fmt.Sprintf("Node %s deleted by %s at %s (audit log %s)", d.Node, who, d.Time.UTC().Format(time.RFC3339), d.Where))
		} else {
			evidence = append(evidence, "no deletion of its Node in the audit log: it never joined, or its Node was deleted before the log starts")
		}
	}
	cmd := removeCommand(inst, in.Region)
	remediation = "once sure nothing runs on it, remove it with: " + cmd + " (nodekeeper never runs it)"
	if instances.TagValue(inst.Tags, TagAutoScalingGroup) != "" {
		remediation += "; the call fails if it would take the group below its minimum size: lower the minimum first"
	}
	return evidence, remediation
}
