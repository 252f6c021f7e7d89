package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// bootInstance is a running instance of the cluster with its root volume.
func bootInstance(id, dns string, launched time.Time, tags map[string]string) ec2types.Instance {
	inst := ec2Instance(id, "running", "m5.large", "subnet-a", dns, launched, tags)
	inst.RootDeviceName = strp("/dev/xvda")
	inst.BlockDeviceMappings = []ec2types.InstanceBlockDeviceMapping{
		{DeviceName: strp("/dev/xvda"), Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: strp("vol-" + id[2:]), Status: ec2types.AttachmentStatusAttached}},
		{DeviceName: strp("/dev/xvdb"), Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: strp("vol-data" + id[2:]), Status: ec2types.AttachmentStatusAttached}},
	}
	return inst
}

// addEBSMinutes stores one sample per minute from start for an AWS/EBS metric of a volume.
func addEBSMinutes(cloud *awsfake.Cloud, volume, metric string, start time.Time, values ...float64) {
	for i, v := range values {
		cloud.AddMetricSamples("AWS/EBS", metric, map[string]string{"VolumeId": volume}, awsfake.MetricSample{Time: start.Add(time.Duration(i) * time.Minute), Value: v})
	}
}

// auditEvent is one kube-apiserver audit event (audit.k8s.io/v1, level Metadata) as the API
// server writes it to its log backend.
func auditEvent(at time.Time, verb, user, agent, resource, name string, code int) map[string]any {
	return map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": fmt.Sprintf("6e2b1f3c-0000-4000-8000-%012d", at.UnixNano()%1e12),
		"stage": "ResponseComplete", "requestURI": "/api/v1/" + resource + "/" + name, "verb": verb,
		"user":      map[string]any{"username": user, "groups": []string{"system:authenticated"}},
		"sourceIPs": []string{"10.90.0.15"}, "userAgent": agent,
		"objectRef":                map[string]any{"resource": resource, "name": name, "apiVersion": "v1"},
		"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": code},
		"requestReceivedTimestamp": at.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"stageTimestamp":           at.Add(12 * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000000Z"),
		"annotations":              map[string]any{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""},
	}
}

// TestDoctorBootVolumesAndZombies: on a real control plane with the in-memory EC2 and CloudWatch,
// doctor --aws names the recently launched node whose gp2 root volume ran at its burst limit
// until its credits ran out, as an error with the pods stuck on it, and not the healthy gp3 node
// (which has a stuck pod of its own) nor a node that launched before the boot window. Each
// instance running without a Node is reported with its Auto Scaling group, who deleted its Node
// (from an audit log read with --audit-log) and the command that removes it: through the group
// when it has one, with EC2 otherwise.
func TestDoctorBootVolumesAndZombies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	now := time.Now()
	const (
		busy, calm, old          = "ip-10-90-1-10.ec2.internal", "ip-10-90-1-11.ec2.internal", "ip-10-90-1-12.ec2.internal"
		busyID, calmID, oldID    = "i-0b007b0500000001", "i-0ca1a00000000002", "i-001d00000000003"
		zombieASG, zombiePlain   = "i-0z0mb1ea5600001", "i-0z0mb1e91a1n002"
		zombieASGDNS, zombieDNS2 = "ip-10-90-2-20.ec2.internal", "ip-10-90-2-21.ec2.internal"
	)
	for name, id := range map[string]string{busy: busyID, calm: calmID, old: oldID} {
		n := podnetNode(name, "Amazon Linux 2023.5.20240701", nil)
		n.Labels["nodekeeper.io/test"] = "bootvolumes"
		n.Spec.ProviderID = "aws:///us-west-2a/" + id
		createNode(ctx, t, admin, n)
	}
	ns := "bootvol-team"
	testNamespace(ctx, t, admin, ns)
	for _, p := range []kubeletsim.PodSpec{
		{Namespace: ns, Name: "api-0", Node: busy, ScheduledAt: now.Add(-25 * time.Minute)},
		{Namespace: ns, Name: "api-1", Node: busy, ScheduledAt: now.Add(-24 * time.Minute)},
		{Namespace: ns, Name: "worker-0", Node: calm, ScheduledAt: now.Add(-10 * time.Minute)},
	} {
		if _, err := kubeletsim.CreateStuckPod(ctx, admin, p); err != nil {
			t.Fatal(err)
		}
	}

	prod := map[string]string{"eks:cluster-name": "prod", "kubernetes.io/cluster/prod": "owned"}
	withASG := map[string]string{"eks:cluster-name": "prod", "kubernetes.io/cluster/prod": "owned", "aws:autoscaling:groupName": "eks-ng-general-20c8f2a1"}
	busyAt, calmAt, oldAt := now.Add(-30*time.Minute).Truncate(time.Minute), now.Add(-20*time.Minute).Truncate(time.Minute), now.Add(-5*time.Hour).Truncate(time.Minute)
	cloud := awsfake.New()
	cloud.PageSize = 2
	cloud.Instances = []ec2types.Instance{
		bootInstance(busyID, busy, busyAt, prod), bootInstance(calmID, calm, calmAt, prod), bootInstance(oldID, old, oldAt, withASG),
		bootInstance(zombieASG, zombieASGDNS, now.Add(-6*time.Hour), withASG),
		bootInstance(zombiePlain, zombieDNS2, now.Add(-4*time.Hour), prod),
	}
	volume := func(id string, typ ec2types.VolumeType, size, iops int32, throughput *int32) ec2types.Volume {
		return ec2types.Volume{VolumeId: strp(id), VolumeType: typ, Size: &size, Iops: &iops, Throughput: throughput, State: ec2types.VolumeStateInUse}
	}
	cloud.Volumes = []ec2types.Volume{
		volume("vol-"+busyID[2:], ec2types.VolumeTypeGp2, 20, 100, nil),
		volume("vol-"+calmID[2:], ec2types.VolumeTypeGp3, 20, 3000, awssdk.Int32(125)),
		volume("vol-"+oldID[2:], ec2types.VolumeTypeGp2, 20, 100, nil),
	}
	// The busy node bursts at 3,000 IOPS for eight minutes until its credits run out, then
	// crawls at its 100 IOPS baseline with a deep queue: twelve minutes at its limit; the calm node reads at a sixth of its
	// limit; the old node was as busy as the first, but hours ago.
	busyOps := []float64{177000, 178000, 176000, 177500, 178000, 177000, 176500, 177000, 5900, 5950, 5980, 5990}
	addEBSMinutes(cloud, "vol-"+busyID[2:], "VolumeReadOps", busyAt, busyOps...)
	addEBSMinutes(cloud, "vol-"+busyID[2:], "BurstBalance", busyAt, 100, 88, 75, 62, 50, 37, 25, 12, 0, 0, 0, 0)
	addEBSMinutes(cloud, "vol-"+busyID[2:], "VolumeQueueLength", busyAt, 8, 9, 9, 10, 9, 8, 9, 9, 31, 33, 32, 30)
	addEBSMinutes(cloud, "vol-"+calmID[2:], "VolumeReadOps", calmAt, 30000, 28000, 20000, 9000)
	addEBSMinutes(cloud, "vol-"+calmID[2:], "VolumeReadBytes", calmAt, 1.2e9, 1.0e9, 0.6e9, 0.2e9)
	addEBSMinutes(cloud, "vol-"+calmID[2:], "VolumeQueueLength", calmAt, 1, 1, 0.5, 0.2)
	addEBSMinutes(cloud, "vol-"+oldID[2:], "VolumeReadOps", oldAt, busyOps...)
	addEBSMinutes(cloud, "vol-"+oldID[2:], "BurstBalance", oldAt, 100, 50, 0, 0)

	// The audit log: alice deletes the first zombie's Node with kubectl, among other requests.
	deletedAt := now.Add(-5 * time.Hour).Truncate(time.Second)
	var log strings.Builder
	for _, ev := range []map[string]any{
		auditEvent(deletedAt.Add(-time.Minute), "get", "system:node:"+zombieASGDNS, "kubelet/v1.31.4 (linux/amd64) kubernetes/1d2b3c4", "nodes", zombieASGDNS, 200),
		auditEvent(deletedAt, "delete", "arn:aws:sts::111122223333:assumed-role/ops/alice", "kubectl/v1.31.0 (linux/amd64) kubernetes/1d2b3c4", "nodes", zombieASGDNS, 200),
		auditEvent(deletedAt.Add(time.Second), "get", "system:node:"+zombieASGDNS, "kubelet/v1.31.4 (linux/amd64) kubernetes/1d2b3c4", "nodes", zombieASGDNS, 404),
	} {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		log.Write(append(line, '\n'))
	}
	logPath := filepath.Join(t.TempDir(), "kube-apiserver-audit.log")
	if err := os.WriteFile(logPath, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	deletions, err := ReadNodeDeletions([]string{logPath}, func(msg string) { t.Errorf("a clean log warns: %s", msg) })
	if err != nil {
		t.Fatal(err)
	}

	run := func(t *testing.T, o EC2Options) map[string]findings.Finding {
		t.Helper()
		o.Cluster, o.Region = "prod", "us-west-2"
		rep, err := runAWS(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", EC2: &o}, Deps{EC2: cloud, CloudWatch: cloud})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]findings.Finding{}
		for _, f := range rep.Findings() {
			if f.Section == SectionEC2 && (f.Code == RuleBootVolumeIOBound.Code || f.Code == RuleInstanceWithoutNode.Code) {
				if _, dup := got[f.Resource]; dup {
					t.Errorf("two findings for %s", f.Resource)
				}
				got[f.Resource] = f
			}
		}
		return got
	}
	has := func(t *testing.T, f findings.Finding, texts ...string) {
		t.Helper()
		all := f.Message + "\n" + strings.Join(f.Evidence, "\n") + "\n" + f.Remediation
		for _, s := range texts {
			if !strings.Contains(all, s) {
				t.Errorf("%s %s lacks %q:\n%s", f.Code, f.Resource, s, all)
			}
		}
	}

	t.Run("with the audit log", func(t *testing.T) {
		got := run(t, EC2Options{AuditLog: true, NodeDeletions: deletions})
		if len(got) != 3 {
			t.Errorf("findings for %v, want node/%s, instance/%s, instance/%s", keys(got), busy, zombieASG, zombiePlain)
		}
		b, ok := got["node/"+busy]
		if !ok || b.Code != "NK805" || b.Severity != findings.Error {
			t.Fatalf("busy node: %+v", b)
		}
		has(t, b, "root volume vol-"+busyID[2:]+" of "+busyID, "12 minutes at its IOPS or throughput limit", busyAt.UTC().Format("15:04")+" to "+busyAt.Add(12*time.Minute).UTC().Format("15:04"), "burst credits ran out",
			"2 pods stuck in ContainerCreating", "stuck pod "+ns+"/api-0", "stuck pod "+ns+"/api-1", "limits gp2, 20 GiB: 100 IOPS (3000 with burst credits)",
			"queue length up to 33.0")
		if strings.Contains(strings.Join(b.Evidence, "\n"), "worker-0") {
			t.Errorf("the calm node's stuck pod is blamed on the busy node's volume: %v", b.Evidence)
		}
		z := got["instance/"+zombieASG]
		has(t, z, "Auto Scaling group eks-ng-general-20c8f2a1",
			"Node "+zombieASGDNS+" deleted by arn:aws:sts::111122223333:assumed-role/ops/alice (kubectl/v1.31.0 (linux/amd64) kubernetes/1d2b3c4) at "+deletedAt.UTC().Format(time.RFC3339),
			logPath+":line 2",
			"aws autoscaling terminate-instance-in-auto-scaling-group --instance-id "+zombieASG+" --should-decrement-desired-capacity --region us-west-2")
		p := got["instance/"+zombiePlain]
		has(t, p, "not in an Auto Scaling group", "no deletion of its Node in the audit log", "aws ec2 terminate-instances --instance-ids "+zombiePlain+" --region us-west-2")
		if strings.Contains(p.Remediation, "autoscaling") {
			t.Errorf("an instance without a group is removed through Auto Scaling: %s", p.Remediation)
		}
	})

	t.Run("without an audit log", func(t *testing.T) {
		got := run(t, EC2Options{})
		z := got["instance/"+zombieASG]
		has(t, z, "Auto Scaling group eks-ng-general-20c8f2a1", "--should-decrement-desired-capacity")
		if ev := strings.Join(z.Evidence, "\n"); strings.Contains(ev, "deleted by") || strings.Contains(ev, "audit log") {
			t.Errorf("without --audit-log the report speaks of the log: %s", ev)
		}
	})

	t.Run("a shorter boot window leaves the busy node out", func(t *testing.T) {
		if got := run(t, EC2Options{BootWindow: 10 * time.Minute}); got["node/"+busy].Code != "" {
			t.Errorf("a node launched 30m ago is judged with a 10m window: %+v", got["node/"+busy])
		}
	})

	t.Run("metrics denied", func(t *testing.T) {
		cloud.Deny[nkaws.PermGetMetricData] = true
		defer delete(cloud.Deny, nkaws.PermGetMetricData)
		got := run(t, EC2Options{})
		b := got["cloudwatch"]
		if b.Code != "NK805" || b.Severity != findings.Skipped || !strings.Contains(b.Message, "cloudwatch:GetMetricData") {
			t.Errorf("denied GetMetricData: %+v (all: %v)", b, keys(got))
		}
		if _, ok := got["instance/"+zombieASG]; !ok {
			t.Errorf("the zombies are not reported when only the metrics are denied: %v", keys(got))
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
