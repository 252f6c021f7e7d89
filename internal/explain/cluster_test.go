package explain

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// explain reads what the API server writes to its audit log as EKS does (Node creates and
// deletes with their requests, node-lease writes with their bodies); kube-controller-manager
// runs, so that its garbage collector deletes a deleted Node's lease as on EKS.
func TestMain(m *testing.M) {
	testenv.RunMain(m, testenv.MainOptions{Options: testenv.Options{AuditPolicy: testenv.AuditLikeEKS, ControllerManager: true}, QuietKlog: true}, &env)
}

// depsFor builds explain's clients for cfg as the CLI does (kube.NewClients, doctor.DepsFrom),
// counting the requests.
func depsFor(t testing.TB, cfg *rest.Config) Deps {
	t.Helper()
	cfg, requests := kube.CountRequests(cfg)
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := doctor.DepsFrom(clients, requests)
	return Deps{Client: d.Client, Bulk: d.Bulk, REST: d.REST, Proxy: d.Proxy, Requests: requests}
}

// auditInputs is the control plane's audit log as --audit-log reads it.
func auditInputs(t testing.TB) []read.Input {
	t.Helper()
	in, err := read.ExpandInputs([]string{env.AuditLogPath()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// zombie is a node whose Node an admin deleted while its kubelet (before 1.29) kept running and
// renewing its lease, and whose instance keeps running in its Auto Scaling group.
type zombie struct {
	name, id, ip string
	cloud        *awsfake.Cloud
	deletedBy    string
}

const (
	zombieASG     = "eks-ng-zombie-7ac5e1f0"
	zombieLT      = "lt-0a1b2c3d4e5f60718"
	zombieVersion = "3"
)

// startZombie runs the zombie's life on the real control plane: the kubelet registers its Node
// and lease, alice deletes the Node, the garbage collector deletes the lease, the kubelet
// re-creates it without an owner and keeps renewing it (as kubelets before 1.29 do), and EC2 (awsfake, stateful, as
// DescribeInstances, DescribeAutoScalingGroups and DescribeLaunchTemplateVersions answer it)
// has the instance running in its group, launched from version 3 of its launch template.
func startZombie(ctx context.Context, t *testing.T, name string) *zombie {
	t.Helper()
	fleet := env.NewFleet(t)
	k, err := fleet.Start(ctx, kubeletsim.Config{Name: name, Mode: kubeletsim.Legacy, Zone: "us-west-2a", LeaseDurationSeconds: 4})
	if err != nil {
		t.Fatal(err)
	}
	admin := env.AdminClient()
	t.Cleanup(func() {
		k.Stop()
		_ = admin.CoordinationV1().Leases("kube-node-lease").Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	uid := k.NodeUID()
	env.WaitNodeLease(t, name, time.Minute, "owned by its Node", testenv.OwnedByNode(uid))
	node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	z := &zombie{name: name, id: instances.InstanceIDFromProviderID(node.Spec.ProviderID), deletedBy: "alice@example.com"}
	for _, a := range node.Status.Addresses {
		if a.Type == "InternalIP" {
			z.ip = a.Address
		}
	}
	alice := kubernetes.NewForConfigOrDie(env.UserConfig(z.deletedBy, "system:masters"))
	if err := alice.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// The kubelet keeps renewing: a lease without owner, renewed after the deletion.
	env.WaitNodeLease(t, name, time.Minute, "renewed without an owner after its Node's deletion", func(l *coordinationv1.Lease) bool {
		return l != nil && len(l.OwnerReferences) == 0 && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(deleted.Add(time.Second))
	})
	// Launched two hours ago: older than the ten minutes an instance may take to register.
	launched := node.CreationTimestamp.Add(-2 * time.Hour)
	c := awsfake.New()
	c.Instances = []ec2types.Instance{{
		InstanceId: &z.id, InstanceType: "m5.large", PrivateDnsName: &name, PrivateIpAddress: &z.ip, LaunchTime: &launched,
		State:     &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
		Placement: &ec2types.Placement{AvailabilityZone: strp("us-west-2a")},
		Tags: []ec2types.Tag{{Key: strp("aws:autoscaling:groupName"), Value: strp(zombieASG)}, {Key: strp("eks:cluster-name"), Value: strp("prod")},
			{Key: strp("aws:ec2launchtemplate:id"), Value: strp(zombieLT)}, {Key: strp("aws:ec2launchtemplate:version"), Value: strp(zombieVersion)}},
	}}
	c.AutoScalingGroups = []asgtypes.AutoScalingGroup{{AutoScalingGroupName: strp(zombieASG), DesiredCapacity: ptr32(3), MinSize: ptr32(1), MaxSize: ptr32(10),
		LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: strp(zombieLT), Version: strp("$Latest")}}}
	created := launched.Add(-24 * time.Hour)
	c.LaunchTemplateVersions = []ec2types.LaunchTemplateVersion{{LaunchTemplateId: strp(zombieLT), VersionNumber: ptr64(3), CreateTime: &created,
		VersionDescription: strp("bump AMI"),
		LaunchTemplateData: &ec2types.ResponseLaunchTemplateData{UserData: awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod\n", false)}}}
	z.cloud = c
	return z
}

func ptr32(v int32) *int32 { return &v }
func ptr64(v int64) *int64 { return &v }

func (z *zombie) aws() *AWSOptions {
	return &AWSOptions{EC2: z.cloud, LaunchTemplates: z.cloud, AutoScaling: z.cloud, Cluster: "prod", Region: "us-west-2"}
}

// TestZombieStory: explain by the instance ID, by the lease name and by the private DNS name in
// the other form (us-east-1's, holding the IP) each tell, in this order, the Node's creation
// (audit file:line), who deleted it and when (file:line), the renewals after the deletion, the
// running instance with its group and launch-template version; then NK801 with the group's
// terminate command, printed once and never run.
func TestZombieStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "ip-10-77-0-5.us-west-2.compute.internal"
	z := startZombie(ctx, t, name)
	terminate := "aws autoscaling terminate-instance-in-auto-scaling-group --instance-id " + z.id + " --should-decrement-desired-capacity --region us-west-2"
	for _, target := range []string{z.id, name, "ip-10-77-0-5.ec2.internal"} {
		t.Run(target, func(t *testing.T) {
			s, err := Tell(ctx, depsFor(t, env.AdminConfig()), Options{Target: target, Audit: auditInputs(t), AWS: z.aws()})
			if err != nil {
				t.Fatal(err)
			}
			if s.Target.Node != name || s.Target.NodeExists || s.Target.InstanceID != z.id || s.Target.LeaseClass != "zombie" {
				t.Errorf("target %+v", s.Target)
			}
			auditFile := filepath.Base(env.AuditLogPath())
			steps := []struct {
				what string
				ok   func(Line) bool
			}{
				{"the Node's creation in the audit log", func(l Line) bool {
					return l.Source == SourceAudit && strings.Contains(l.Where, auditFile+":") && strings.HasPrefix(l.What, "Node "+name+" created by system:node:"+name)
				}},
				{"alice's deletion with its file:line", func(l Line) bool {
					return l.Source == SourceAudit && strings.Contains(l.Where, auditFile+":") && strings.HasPrefix(l.What, "Node "+name+" deleted by "+z.deletedBy)
				}},
				{"the renewals after the deletion", func(l Line) bool {
					return l.Source == SourceLease && strings.Contains(l.What, "after the Node's deletion: its kubelet still runs")
				}},
				{"the running instance with its group and launch-template version", func(l Line) bool {
					return l.Source == SourceEC2 && strings.Contains(l.What, "instance "+z.id+" is running") &&
						strings.Contains(l.What, "Auto Scaling group "+zombieASG) && strings.Contains(l.What, "launch template "+zombieLT+" version "+zombieVersion)
				}},
			}
			at := -1
			for _, st := range steps {
				found := -1
				for i := at + 1; i < len(s.Timeline); i++ {
					if st.ok(s.Timeline[i]) {
						found = i
						break
					}
				}
				if found < 0 {
					t.Errorf("no %s after line %d of the timeline", st.what, at)
					continue
				}
				at = found
			}
			n := 0
			for _, f := range s.Fixes {
				if strings.Contains(f, terminate) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the terminate command is in %d fixes, want 1: %q", n, s.Fixes)
			}
			if len(s.Gaps) != 0 {
				t.Errorf("gaps: %+v", s.Gaps)
			}
			var doc bytes.Buffer
			if err := WriteJSON(&doc, s); err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, Kind, doc.Bytes())
			if t.Failed() {
				var b strings.Builder
				_ = WriteText(&b, s)
				t.Log(b.String())
			}
		})
	}
	// Nothing was asked to act: awsfake saw only Describe calls.
	for _, p := range z.cloud.CalledPermissions() {
		if !strings.Contains(p, ":Describe") {
			t.Errorf("AWS call %s", p)
		}
	}
}
