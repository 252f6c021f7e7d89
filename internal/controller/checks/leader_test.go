package checks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// replicaUsers are the users of TestTwoReplicasOnlyTheLeaderChecks's two controller replicas; the package's
// audit policy records their requests, and nobody else's.
var replicaUsers = []string{"nodekeeper-replica-a", "nodekeeper-replica-b"}

// replicaGroup is the replicas' group, bound to the shipped roles.
const replicaGroup = "nodekeeper-replicas"

// bindShippedRBAC binds the roles of the kustomize base and the checks component to group too,
// as the shipped bindings bind them to the controller's service account.
func bindShippedRBAC(ctx context.Context, t *testing.T, group string) {
	t.Helper()
	admin := env.AdminClient()
	subjects := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}}
	for _, file := range []string{"deploy/kustomize/base/rbac.yaml", "deploy/kustomize/components/checks/rbac.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatal(err)
			}
			switch meta.Kind {
			case "RoleBinding":
				var o rbacv1.RoleBinding
				if err = yaml.UnmarshalStrict(doc, &o); err == nil {
					o.Name, o.Subjects = o.Name+"-"+group, subjects
					_, err = admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
				}
			case "ClusterRoleBinding":
				var o rbacv1.ClusterRoleBinding
				if err = yaml.UnmarshalStrict(doc, &o); err == nil {
					o.Name, o.Subjects = o.Name+"-"+group, subjects
					_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
				}
			}
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
		}
	}
}

// auditReplicas records every request of the two replicas at Metadata level (who, what, which
// user agent, when), and nothing else, so that the log stays small.
var auditReplicas = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + strings.Join(replicaUsers, `", "`) + `"]
- level: None
`

// checkLoopAgent tells the check loop's requests from the rest of a controller's: its clients'
// user agent is kube.SideConfig's "nodekeeper/<version> (controller, checks)" (reads) and
// "(controller, checks-events)" (its Events).
func checkLoopAgent(ua string) bool {
	return strings.HasPrefix(ua, kube.UserAgent("")+" (controller, checks")
}

// TestTwoReplicasOnlyTheLeaderChecks is issue 28's proof that with two controller replicas only
// the leader checks and scans EC2. Two processes run the controller's real command
// (`nodekeeper-controller --checks --aws`, leader election on) with the RBAC the kustomize base
// and the checks component ship, each as its own user with its own AWS (an awsfake
// account served over the wire by awsserver, as one IAM role's two pods would reach EC2), on a
// small cluster: three Nodes of one node group, the aws-node DaemonSet with a pod on each node
// whose ipamd (kubeletstub) is read through the pod proxy, running and stuck pods. The check
// interval is an hour, so a check that happens in this test happens at once.
//
//   - The leader checks: the audit log holds its check loop's requests (user agent
//     "(controller, checks)"), its AWS records the check loop's and the EC2 loop's calls.
//   - The standby makes no request with the check loop's user agent and no AWS call at all,
//     though its loops look every second whether it leads.
//   - The leader is stopped (SIGTERM, as the kubelet stops a pod): the standby takes over and
//     checks at once, well within one interval; only then do its check requests and AWS calls
//     begin.
func TestTwoReplicasOnlyTheLeaderChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	// The replicas run with the RBAC the kustomize base and the checks component ship, bound to
	// their group: the leader election Lease is in the namespace that RBAC names.
	const electionNS = "nodekeeper"
	applyShippedRBAC(ctx, t)
	bindShippedRBAC(ctx, t, replicaGroup)

	// The cluster: three Nodes with their aws-node pods (ipamd healthy on two, the subnet
	// exhausted on the first, where two pods are stuck) and a running pod on each node.
	ds := env.CreateAWSNode(t, "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1",
		map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1"})
	ns, err := kubeletstub.New()
	if err != nil {
		t.Fatalf("the pod proxy test needs a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	healthy, subnet := ipamdBody(t, 6, 4, 0), ipamdBody(t, 3, 3, 6)
	ipamd, err := kubeletstub.StartIPAMD(ns, make([]int, 3), func(i int) []byte {
		if i == 0 {
			return subnet
		}
		return healthy
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ipamd.Close() })
	const team = "replicas-team"
	if err := kubeletsim.EnsureNamespace(ctx, admin, team); err != nil {
		t.Fatal(err)
	}
	var instances []ec2types.Instance
	for i, ep := range ipamd.Endpoints() {
		name := fmt.Sprintf("ip-10-78-0-%d.ec2.internal", i+1)
		id, subnetID := fmt.Sprintf("i-0replicas%d", i), "subnet-0replicas"
		if err := createBenchNode(ctx, admin, name, "mng-replicas", ns.NSIP); err != nil {
			t.Fatal(err)
		}
		// The Node's instance, so that doctor's EC2 checks and plan find its subnet.
		if _, err := admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"providerID":"aws:///us-west-2a/`+id+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if err := createAWSNodePod(ctx, admin, ds, name, ns.NSIP, ep.Port); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().Pods(ds.Namespace).Delete(context.Background(), awsNodePodName(name), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
		if _, err := kubeletsim.CreateRunningPod(ctx, admin, kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("web-%d", i), Node: name}, fmt.Sprintf("10.78.1.%d", i+1)); err != nil {
			t.Fatal(err)
		}
		launched := time.Now().Add(-time.Hour)
		instances = append(instances, ec2types.Instance{InstanceId: &id, PrivateDnsName: &name, LaunchTime: &launched, InstanceType: "t3.small",
			SubnetId: &subnetID, State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
			Tags: []ec2types.Tag{{Key: ptr.To("kubernetes.io/cluster/prod"), Value: ptr.To("owned")}, {Key: ptr.To("eks:nodegroup-name"), Value: ptr.To("mng-replicas")}}})
	}
	for i := range 2 {
		if _, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("api-%d", i), Node: "ip-10-78-0-1.ec2.internal",
			ScheduledAt: time.Now().Add(-15 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(team).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})

	type replica struct {
		user string
		aws  *awsserver.Server
		proc *child
	}
	var replicas []*replica
	for _, user := range replicaUsers {
		cloud := awsfake.New()
		cloud.Instances = instances
		cloud.Subnets = []ec2types.Subnet{{SubnetId: ptr.To("subnet-0replicas"), AvailabilityZone: ptr.To("us-west-2a"),
			AvailableIpAddressCount: ptr.To[int32](200), CidrBlock: ptr.To("10.78.0.0/24")}}
		r := &replica{user: user, aws: awsserver.Start(t, cloud)}
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(kubeconfig, env.UserConfig(user, replicaGroup)); err != nil {
			t.Fatal(err)
		}
		// Long terms: the test must not see leadership move on a loaded machine; the leader
		// gives it up when stopped, and the standby looks every second.
		r.proc = startController(t, r.aws.Env(t, "us-west-2"), "--kubeconfig="+kubeconfig, "--grace-period=8760h",
			"--leader-elect=true", "--leader-election-namespace="+electionNS,
			"--leader-election-lease-duration=2m", "--leader-election-renew-deadline=90s", "--leader-election-retry-period=1s",
			"--checks", "--checks-interval=1h", "--aws", "--eks-cluster=prod", "--aws-interval=1h",
			"--checks-headroom-alert=5")
		replicas = append(replicas, r)
	}
	metric := func(r *replica, name, label, value string) float64 {
		v, err := r.proc.metric(name, label, value)
		if err != nil {
			return -1 // not serving yet
		}
		return v
	}
	alive := func(r *replica) error {
		select {
		case <-r.proc.exited:
			return fmt.Errorf("replica %s exited:\n%s", r.user, r.proc.tail())
		default:
			return ctx.Err()
		}
	}
	leading := func(r *replica) bool { return metric(r, "nodekeeper_is_leader", "", "") == 1 }
	checked := func(r *replica) bool {
		return metric(r, "nodekeeper_check_runs_total", "result", "success") >= 1 &&
			metric(r, "nodekeeper_instance_scans_total", "result", "success") >= 1
	}
	var leader, standby *replica
	waitFor(t, "one replica leading, its first check run and EC2 scan done", func() (bool, error) {
		for i, r := range replicas {
			if err := alive(r); err != nil {
				return false, err
			}
			if other := replicas[1-i]; leading(r) && checked(r) && metric(other, "nodekeeper_is_leader", "", "") == 0 {
				leader, standby = r, other
			}
		}
		return leader != nil, nil
	})

	checkRequests := func(user string) []testenv.AuditEvent {
		return env.AuditEvents(t, user, func(e testenv.AuditEvent) bool { return e.User.Username == user && checkLoopAgent(e.UserAgent) })
	}
	// What a check run reads, by "verb resource[/subresource]" as the audit log names it.
	reads := func(evs []testenv.AuditEvent) []string {
		seen := map[string]bool{}
		for _, e := range evs {
			k := e.Verb + " " + e.Resource()
			if e.ObjectRef != nil && strings.Contains(e.RequestURI, "/proxy/") {
				k += "/proxy"
			}
			seen[k] = true
		}
		out := make([]string, 0, len(seen))
		for k := range seen {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	// What a check run reads at least; the audit log is written a little after the requests.
	wantReads := []string{"list nodes", "list pods", "get pods/proxy"}
	waitReads := func(who, user string) []string {
		t.Helper()
		var got []string
		waitFor(t, who+"'s check requests in the audit log", func() (bool, error) {
			got = reads(checkRequests(user))
			for _, want := range wantReads {
				if !slices.Contains(got, want) {
					return false, ctx.Err()
				}
			}
			return true, nil
		})
		return got
	}
	leaderReads := waitReads("the leader", leader.user)
	t.Logf("the leader %s checked (%v) and called AWS (%v); the standby is %s", leader.user, leaderReads, leader.aws.Operations(), standby.user)
	// The check loop's EC2 calls (doctor's EC2 checks, plan's subnets) and the EC2 loop's.
	leaderAWS := leader.aws.Operations()
	if !slices.Contains(leaderAWS, "ec2:DescribeSubnets") || !slices.Contains(leaderAWS, "ec2:DescribeInstances") {
		t.Errorf("the leader's AWS recorded %v, want the check loop's DescribeSubnets and the scans' DescribeInstances", leaderAWS)
	}
	if evs := checkRequests(standby.user); len(evs) != 0 {
		t.Errorf("the standby %s made %d check-loop requests, first %s", standby.user, len(evs), evs[0])
	}
	if calls := standby.aws.Operations(); len(calls) != 0 {
		t.Errorf("the standby %s called AWS: %v", standby.user, calls)
	}

	// Failover: the leader stops and gives up its lease; the standby checks at once.
	stopped := time.Now()
	leader.proc.stop()
	waitFor(t, "the standby leading and checking", func() (bool, error) {
		if err := alive(standby); err != nil {
			return false, err
		}
		return leading(standby) && checked(standby), nil
	})
	waitReads("the new leader", standby.user)
	for _, e := range checkRequests(standby.user) {
		if e.Received.Before(stopped) {
			t.Errorf("the standby's check-loop request before the leader stopped: %s", e)
		}
	}
	if ops := standby.aws.Operations(); !slices.Contains(ops, "ec2:DescribeSubnets") {
		t.Errorf("the new leader's AWS recorded %v, want the check loop's DescribeSubnets", ops)
	}
}
