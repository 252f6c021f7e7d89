package explain

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// judge runs doctor's node checks over what was read of this node, and doctor's EC2 and launch
// template checks over its instance, so that every finding has the code, message and fix doctor
// gives it; the measured cause of stuck pods goes on the timeline too.
func (t *teller) judge() {
	c := t.cl
	in := doctor.NodeInput{Options: t.o.Doctor, Now: t.now, Pods: c.pods, SandboxEvents: c.sandboxEvents, AWSNode: c.awsNode,
		Configz: c.configz, ConfigzErr: c.configzErr, IPAMD: c.ipamd, IPAMDErr: c.ipamdErr, Missing: c.missing}
	in.Options.Lease = t.o.Lease
	if t.node != nil {
		in.Node = t.node.n
	}
	if t.lease != nil {
		in.Lease = t.lease.l
		if t.node == nil && !t.deletedAt.IsZero() {
			v := lease.Classify(t.lease.l, nil, t.now, t.o.Lease)
			if v.RenewTime.After(t.deletedAt) {
				t.add(v.RenewTime, SourceLease, "", "lease renewed %s after the Node's deletion: its kubelet still runs", elapsed(v.RenewTime.Sub(t.deletedAt)))
			}
		}
	}
	var stuck map[string]*doctor.StuckPod
	if t.s.Target.Node != "" {
		f := doctor.NodeFacts(in)
		stuck = f.Pods.Stuck
		rep := findings.NewReport("explain", t.s.Target.Node, t.now, doctor.Sections...)
		doctor.RunChecks(rep, f, doctor.NodeChecks())
		for _, fd := range rep.Findings() {
			if !concernsNode(fd, t.s.Target.Node) {
				continue
			}
			t.fs = append(t.fs, fd)
			if isStuckCause(fd.Code) {
				t.add(t.now, SourceIPAMD, "", "%s: %s", fd.Code, fd.Message)
			}
		}
	}
	if t.o.AWS != nil && t.inst != nil {
		var nodes []corev1.Node
		if t.node != nil {
			nodes = []corev1.Node{*t.node.n}
		}
		inst := t.inst.i
		var running []ec2types.Instance
		if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameRunning {
			running = []ec2types.Instance{inst}
		}
		t.fs = append(t.fs, doctor.CheckEC2(doctor.EC2Inputs{Cluster: t.o.AWS.Cluster, Running: running,
			ByID: map[string]ec2types.Instance{deref(inst.InstanceId): inst}, Nodes: nodes, Now: t.now, RegisterGrace: registerGrace,
			Region: t.o.AWS.Region, AuditLog: len(t.o.Audit) > 0, Deletions: t.deletions})...)
		var ns []*corev1.Node
		if t.node != nil {
			ns = []*corev1.Node{t.node.n}
		}
		for _, v := range t.templates {
			t.fs = append(t.fs, doctor.CheckTemplateVersion(v, ns, nil, nil)...)
		}
		if t.boot != nil {
			t.fs = append(t.fs, doctor.CheckBootVolumes([]doctor.BootVolume{*t.boot}, stuck, t.now)...)
		}
	}
}

// concernsNode keeps the findings about this node and its lease (doctor's checks may speak of
// a cluster-wide resource when given one node; those are not this node's story).
func concernsNode(f findings.Finding, node string) bool {
	switch f.Resource {
	case "node/" + node, "lease/" + lease.NodeLeaseNamespace + "/" + node, lease.NodeLeaseNamespace + "/" + node:
		return true
	}
	return f.Severity == findings.Skipped || len(f.Resource) > 4 && f.Resource[:4] == "pod/"
}

// isStuckCause reports whether code is one of doctor's measured causes of stuck pods (NK743-NK747).
func isStuckCause(code string) bool {
	switch code {
	case doctor.RuleStuckPoolFull.Code, doctor.RuleStuckSubnet.Code, doctor.RuleStuckThrottled.Code, doctor.RuleStuckIPAMDUnreachable.Code, doctor.RuleStuckUnknown.Code:
		return true
	}
	return false
}
