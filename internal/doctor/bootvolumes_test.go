package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

func i32p(v int32) *int32 { return &v }

func ebsVolume(typ ec2types.VolumeType, size int32, iops, throughput *int32) ec2types.Volume {
	return ec2types.Volume{VolumeId: strp("vol-0123"), VolumeType: typ, Size: &size, Iops: iops, Throughput: throughput}
}

// TestLimitsOf: each volume type's limits as the EBS documentation states them.
func TestLimitsOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vol    ec2types.Volume
		want   volumeLimits
		judged bool
	}{
		{"gp2 small: 100 IOPS floor, bursts to 3000, 128 MiB/s", ebsVolume(ec2types.VolumeTypeGp2, 20, i32p(100), nil), volumeLimits{100, 3000, 128, 128}, true},
		{"gp2 200 GiB: 250 MiB/s only while bursting", ebsVolume(ec2types.VolumeTypeGp2, 200, i32p(600), nil), volumeLimits{600, 3000, 128, 250}, true},
		{"gp2 1000 GiB: baseline 3000, no burst above it", ebsVolume(ec2types.VolumeTypeGp2, 1000, i32p(3000), nil), volumeLimits{3000, 3000, 250, 250}, true},
		{"gp2 6000 GiB: 16000 ceiling", ebsVolume(ec2types.VolumeTypeGp2, 6000, i32p(16000), nil), volumeLimits{16000, 16000, 250, 250}, true},
		{"gp3 without provisioned figures: 3000 and 125", ebsVolume(ec2types.VolumeTypeGp3, 80, nil, nil), volumeLimits{3000, 3000, 125, 125}, true},
		{"gp3 provisioned", ebsVolume(ec2types.VolumeTypeGp3, 80, i32p(6000), i32p(500)), volumeLimits{6000, 6000, 500, 500}, true},
		{"io2: provisioned IOPS, throughput not judged", ebsVolume(ec2types.VolumeTypeIo2, 100, i32p(5000), nil), volumeLimits{5000, 5000, 0, 0}, true},
		{"io1 without IOPS", ebsVolume(ec2types.VolumeTypeIo1, 100, nil, nil), volumeLimits{}, false},
		{"magnetic", ebsVolume(ec2types.VolumeTypeStandard, 8, nil, nil), volumeLimits{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := limitsOf(tc.vol)
			if got != tc.want || ok != tc.judged {
				t.Errorf("limitsOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.judged)
			}
		})
	}
}

var bootT0 = unitNow.Add(-30 * time.Minute)

// minutes builds a per-minute series from bootT0: value i for minute i.
func minutes(vals ...float64) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for i, v := range vals {
		out[bootT0.Add(time.Duration(i)*time.Minute)] = v
	}
	return out
}

// perMinute turns a rate (per second) into the minute's Sum as CloudWatch reports it.
func perMinute(rates ...float64) map[time.Time]float64 {
	sums := make([]float64, len(rates))
	for i, r := range rates {
		sums[i] = r * 60
	}
	return minutes(sums...)
}

func bootVolume(node string, vol ec2types.Volume) BootVolume {
	return BootVolume{Node: node, InstanceID: "i-0" + node, Launched: bootT0, Volume: vol}
}

// TestJudgeBoot: minutes at 90% of the IOPS or throughput limit, and an exhausted burst
// balance, make a boot IO-bound; fewer than three such minutes do not.
func TestJudgeBoot(t *testing.T) {
	gp2 := ebsVolume(ec2types.VolumeTypeGp2, 20, i32p(100), nil)
	gp3 := ebsVolume(ec2types.VolumeTypeGp3, 80, i32p(3000), i32p(125))
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		b         BootVolume
		minutesAt int
		burstOut  bool
		bound     bool
	}{
		{"gp2 bursting at 3000 then out of credits at its 100 baseline", func() BootVolume {
			b := bootVolume("a", gp2)
			b.ReadOps, b.WriteOps = perMinute(2900, 2900, 2900, 95, 95), perMinute(50, 50, 50, 3, 3)
			b.Burst = minutes(60, 30, 5, 0, 0)
			return b
		}(), 5, true, true},
		{"gp3 at its IOPS limit for three minutes", func() BootVolume {
			b := bootVolume("b", gp3)
			b.ReadOps = perMinute(2800, 2750, 2990, 300)
			return b
		}(), 3, false, true},
		{"gp3 at its IOPS limit for two minutes only", func() BootVolume {
			b := bootVolume("c", gp3)
			b.ReadOps = perMinute(2800, 2990, 300, 300)
			return b
		}(), 2, false, false},
		{"gp3 at its throughput limit, few IOPS", func() BootVolume {
			b := bootVolume("d", gp3)
			b.ReadOps = perMinute(200, 200, 200)
			b.ReadBytes, b.WriteBytes = perMinute(105*mib, 110*mib, 120*mib), perMinute(10*mib, 10*mib, 5*mib)
			return b
		}(), 3, false, true},
		{"gp2 bursting below 3000 with credits left", func() BootVolume {
			b := bootVolume("e", gp2)
			b.ReadOps = perMinute(1500, 1500, 1500, 1500)
			b.Burst = minutes(90, 80, 70, 60)
			return b
		}(), 0, false, false},
		{"no metrics yet", bootVolume("f", gp3), 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeBoot(tc.b)
			if v.minutesAt != tc.minutesAt || v.burstOut != tc.burstOut || v.ioBound() != tc.bound {
				t.Errorf("minutes at limit %d, burst out %v, IO-bound %v; want %d, %v, %v", v.minutesAt, v.burstOut, v.ioBound(), tc.minutesAt, tc.burstOut, tc.bound)
			}
		})
	}
}

// TestCheckBootVolumes: an IO-bound node is a warning, an error with the pods stuck on it
// listed; a healthy node is not named, and a stuck pod elsewhere is not blamed on a volume.
func TestCheckBootVolumes(t *testing.T) {
	gp2 := ebsVolume(ec2types.VolumeTypeGp2, 20, i32p(100), nil)
	bound := func(node string) BootVolume {
		b := bootVolume(node, gp2)
		b.ReadOps, b.Burst, b.Queue = perMinute(2950, 2950, 2950, 99), minutes(50, 20, 1, 0), minutes(12, 40, 38, 9)
		return b
	}
	healthy := bootVolume("calm", ebsVolume(ec2types.VolumeTypeGp3, 80, nil, nil))
	healthy.ReadOps = perMinute(400, 300, 200)
	stuck := map[string]*StuckPod{
		"web/a": {Namespace: "web", Name: "a", Node: "busy", Since: bootT0.Add(5 * time.Minute), Cause: CauseNoEvent},
		"web/b": {Namespace: "web", Name: "b", Node: "busy", Since: bootT0.Add(6 * time.Minute), Cause: CauseNoEvent},
		"web/c": {Namespace: "web", Name: "c", Node: "calm", Since: bootT0.Add(6 * time.Minute), Cause: CauseNoEvent},
	}
	got := checkBootVolumes([]BootVolume{bound("busy"), healthy, bound("quiet")}, stuck, unitNow)
	var summary []string
	for _, f := range got {
		summary = append(summary, f.Resource+" "+f.Severity.String())
	}
	if want := []string{"node/busy " + findings.Error.String(), "node/quiet " + findings.Warning.String()}; !slices.Equal(summary, want) {
		t.Fatalf("findings %v, want %v", summary, want)
	}
	busy := got[0]
	for _, want := range []string{"root volume vol-0123 of i-0busy", "30m ago", "4 minutes at its IOPS or throughput limit", "burst credits ran out", "2 pods stuck in ContainerCreating"} {
		if !strings.Contains(busy.Message, want) {
			t.Errorf("message %q lacks %q", busy.Message, want)
		}
	}
	ev := strings.Join(busy.Evidence, "\n")
	for _, want := range []string{"limits gp2, 20 GiB: 100 IOPS (3000 with burst credits), 128 MiB/s", "peak 2950 IOPS", "queue length up to 40.0", "burst balance down to 0%", "stuck pod web/a", "stuck pod web/b"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if strings.Contains(ev, "web/c") {
		t.Errorf("a pod stuck on another node is listed:\n%s", ev)
	}
	if strings.Contains(strings.Join(got[1].Evidence, "\n"), "stuck pod") {
		t.Errorf("a node without stuck pods lists some: %v", got[1].Evidence)
	}

	// CloudWatch answered part of a series: an IO-bound volume says so in its evidence, and a
	// volume not shown IO-bound gets an info finding instead of silence.
	partBound, partCalm := bound("busy"), healthy
	partBound.Partial, partCalm.Partial = []string{"VolumeReadOps"}, []string{"VolumeQueueLength", "BurstBalance"}
	got = checkBootVolumes([]BootVolume{partBound, partCalm}, nil, unitNow)
	if len(got) != 2 || got[0].Severity != findings.Warning || got[1].Severity != findings.Info ||
		!strings.Contains(strings.Join(got[0].Evidence, "\n"), "CloudWatch returned only part of VolumeReadOps") ||
		!strings.Contains(got[1].Message, "CloudWatch returned only part of VolumeQueueLength, BurstBalance") {
		t.Errorf("partial data: %+v", got)
	}
}

// TestZombieReport: the evidence and the command of an instance running without a Node.
func TestZombieReport(t *testing.T) {
	inst := func(id, dns string, tags map[string]string) ec2types.Instance {
		return ec2Instance(id, "running", "m5.large", "subnet-a", dns, unitNow.Add(-3*time.Hour), tags)
	}
	asg := map[string]string{"eks:cluster-name": "prod", TagAutoScalingGroup: "eks-ng-a-2ac8"}
	deletions := []NodeDeletion{
		{Node: "ip-10-0-1-5.ec2.internal", Time: unitNow.Add(-2 * time.Hour), User: "arn:aws:sts::111122223333:assumed-role/ops/alice", UserAgent: "kubectl/v1.31.0", Where: "audit.log:7"},
		{Node: "ip-10-0-1-5.ec2.internal", Time: unitNow.Add(-150 * time.Minute), User: "system:serviceaccount:kube-system:node-controller", Where: "audit.log:3"},
		{Node: "i-0resname00000001.eu-west-1.compute.internal", Time: unitNow.Add(-time.Hour), User: "karpenter", Where: "audit.log:9"},
	}
	for _, tc := range []struct {
		name        string
		inst        ec2types.Instance
		in          EC2Inputs
		evidence    []string
		remediation string
	}{
		{"in a group, deleted by a user in the log", inst("i-0asg000000000001", "ip-10-0-1-5.ec2.internal", asg),
			EC2Inputs{Region: "eu-west-1", AuditLog: true, Deletions: deletions},
			[]string{"Auto Scaling group eks-ng-a-2ac8", "Node ip-10-0-1-5.ec2.internal deleted by arn:aws:sts::111122223333:assumed-role/ops/alice (kubectl/v1.31.0) at " + unitNow.Add(-2*time.Hour).Format(time.RFC3339) + " (audit log audit.log:7)"},
			"aws autoscaling terminate-instance-in-auto-scaling-group --instance-id i-0asg000000000001 --should-decrement-desired-capacity --region eu-west-1 (nodekeeper never runs it); the call fails if it would take the group below its minimum size"},
		{"no group, resource-name hostname", inst("i-0resname00000001", "", map[string]string{"eks:cluster-name": "prod"}),
			EC2Inputs{Region: "eu-west-1", AuditLog: true, Deletions: deletions},
			[]string{"not in an Auto Scaling group", "Node i-0resname00000001.eu-west-1.compute.internal deleted by karpenter at "},
			"aws ec2 terminate-instances --instance-ids i-0resname00000001 --region eu-west-1 (nodekeeper never runs it)"},
		{"log read, no deletion of its Node", inst("i-0plain0000000001", "ip-10-0-1-6.ec2.internal", nil),
			EC2Inputs{AuditLog: true, Deletions: deletions},
			[]string{"not in an Auto Scaling group", "no deletion of its Node in the audit log"},
			"aws ec2 terminate-instances --instance-ids i-0plain0000000001 (nodekeeper never runs it)"},
		{"no log", inst("i-0asg000000000001", "ip-10-0-1-5.ec2.internal", asg), EC2Inputs{Deletions: deletions},
			[]string{"Auto Scaling group eks-ng-a-2ac8"},
			"aws autoscaling terminate-instance-in-auto-scaling-group --instance-id i-0asg000000000001 --should-decrement-desired-capacity (nodekeeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, rem := zombieReport(tc.inst, tc.in)
			if len(ev) != len(tc.evidence) {
				t.Fatalf("evidence %q, want %d lines like %q", ev, len(tc.evidence), tc.evidence)
			}
			for i, want := range tc.evidence {
				if !strings.HasPrefix(ev[i], want) {
					t.Errorf("evidence %d: %q, want it to start %q", i, ev[i], want)
				}
			}
			if !strings.Contains(rem, tc.remediation) {
				t.Errorf("remediation %q lacks %q", rem, tc.remediation)
			}
		})
	}
}

// TestBootVolumeID: the boot waits on the root device's volume, except on Bottlerocket, whose
// images are on its data volume; an instance store root or a missing mapping has none.
func TestBootVolumeID(t *testing.T) {
	mapping := func(dev, vol string) ec2types.InstanceBlockDeviceMapping {
		return ec2types.InstanceBlockDeviceMapping{DeviceName: strp(dev), Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: strp(vol)}}
	}
	two := ec2types.Instance{RootDeviceName: strp("/dev/xvda"), BlockDeviceMappings: []ec2types.InstanceBlockDeviceMapping{mapping("/dev/xvdb", "vol-data"), mapping("/dev/xvda", "vol-root")}}
	node := func(osImage string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osImage}}}
	}
	for _, tc := range []struct {
		name     string
		inst     ec2types.Instance
		node     *corev1.Node
		id, what string
	}{
		{"Amazon Linux: the root device", two, node("Amazon Linux 2023.5.20240701"), "vol-root", "root volume"},
		{"Bottlerocket: the data volume", two, node("Bottlerocket OS 1.20.0 (aws-k8s-1.29)"), "vol-data", "data volume (/dev/xvdb, Bottlerocket's images)"},
		{"root device not mapped", ec2types.Instance{RootDeviceName: strp("/dev/sda1"), BlockDeviceMappings: two.BlockDeviceMappings}, node("Ubuntu 22.04"), "", ""},
		{"Bottlerocket without a data volume", ec2types.Instance{RootDeviceName: strp("/dev/xvda"), BlockDeviceMappings: two.BlockDeviceMappings[1:]}, node("Bottlerocket OS 1.20.0"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if id, what := bootVolumeID(tc.inst, tc.node); id != tc.id || what != tc.what {
				t.Errorf("got %q %q, want %q %q", id, what, tc.id, tc.what)
			}
		})
	}
}
