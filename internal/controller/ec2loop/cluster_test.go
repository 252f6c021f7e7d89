package ec2loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekeeper/nodekeeper/internal/controller"
	"github.com/nodekeeper/nodekeeper/internal/controller/ec2loop"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// The Node requests are audited: TestOnlyTheLeaderScans reads who listed Nodes for a scan.
	testenv.RunMain(m, testenv.MainOptions{Options: testenv.Options{AuditPolicy: testenv.AuditLeasesAndNodes}, BenchmarksStartTheirOwn: true, QuietKlog: true}, &env)
}

// waitFor polls cond until it holds; the limit only ends a test that is already failing.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Minute, true,
		func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestLeaseWorkIndependentOfAWS runs the lease controller and the EC2 loop side by side as
// `controller --aws` does (ec2loop.RunBeside) on a real control plane, with an AWS that answers,
// never answers, throttles every call, denies ec2:DescribeInstances, or answers every page with
// a fresh NextToken (a listing that never ends): in every case the leaked
// leases are deleted, and while AWS hangs they are deleted with the scan still waiting for it.
// With an answering AWS the loop records the InstanceWithoutNode Warning Event in
// kube-node-lease, about the instance that has no Node and not about the one that has.
func TestLeaseWorkIndependentOfAWS(t *testing.T) {
	for i, tc := range []struct {
		name   string
		fault  func(c *awsfake.Cloud, entered chan<- struct{})
		result string // the scan result to wait for
	}{
		{"answers", nil, ec2loop.ResultSuccess},
		{"never answers", func(c *awsfake.Cloud, entered chan<- struct{}) {
			c.SetBefore(func(ctx context.Context, p string) error {
				close(entered)
				return awsfake.Hang(ctx, p)
			})
		}, ""},
		{"throttles", func(c *awsfake.Cloud, _ chan<- struct{}) {
			c.SetBefore(func(_ context.Context, p string) error { return awsfake.Throttled(p) })
		}, instances.FailureThrottled},
		{"denies", func(c *awsfake.Cloud, _ chan<- struct{}) { c.Deny[instances.PermDescribeInstances] = true }, instances.FailureDenied},
		// Issue 31 item 7: every page announces another (a fresh NextToken each time). The
		// scan stops at instances.MaxPages and fails; the leases are deleted meanwhile.
		{"never stops paging", func(c *awsfake.Cloud, _ chan<- struct{}) { c.SetEndlessPages(true) }, instances.FailureOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env.DeleteNodesAndLeases(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			admin := env.AdminClient()
			joined := fmt.Sprintf("ip-10-1-%d-1.ec2.internal", i)
			orphan := fmt.Sprintf("ip-10-1-%d-2.ec2.internal", i)
			if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: joined},
				Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///us-east-1a/i-joined%d", i)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { env.DeleteNodesAndLeases(t) })
			leaked := env.SeedLeakedLeases(t, fmt.Sprintf("leaked-%d", i), 3, time.Now().Add(-2*time.Hour))

			cloud := awsfake.New()
			cloud.Instances = []ec2types.Instance{
				tagged(fmt.Sprintf("i-joined%d", i), joined, time.Now().Add(-time.Hour)),
				tagged(fmt.Sprintf("i-orphan%d", i), orphan, time.Now().Add(-time.Hour)),
			}
			entered := make(chan struct{})
			if tc.fault != nil {
				tc.fault(cloud, entered)
			}
			cfg := env.UserConfig(fmt.Sprintf("nodekeeper-ec2loop-%d", i), "system:masters")
			reg := prometheus.NewRegistry()
			c, err := controller.NewForConfig(cfg, controller.Options{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			deps, err := ec2loop.NewDeps(cfg, cloud, c.Leading)
			if err != nil {
				t.Fatal(err)
			}
			// Scans every second: the first one runs before the controller leads, and only the
			// leader records Events.
			loop, err := ec2loop.New(deps, ec2loop.Options{Cluster: "prod", Registry: reg, Interval: time.Second, Timeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- ec2loop.RunBeside(ctx, loop, c.Run) }()

			if tc.result == "" {
				<-entered // the scan now waits for an AWS that never answers
			}
			waitFor(t, "the leaked leases' deletion", func() (bool, error) {
				for _, name := range leaked {
					if l, err := env.NodeLease(ctx, name); l != nil || err != nil {
						return false, err
					}
				}
				return true, nil
			})
			scans := func(result string) float64 {
				s, err := promscrape.Gather(reg)
				if err != nil {
					t.Fatal(err)
				}
				return promscrape.Sum(s, "nodekeeper_instance_scans_total", "result", result)
			}
			if tc.result == "" {
				var total float64
				for _, r := range ec2loop.ScanResults {
					total += scans(r)
				}
				if total != 0 {
					t.Errorf("the hanging scan finished (%g scans counted) before the leases were deleted", total)
				}
			} else {
				waitFor(t, "a scan with result "+tc.result, func() (bool, error) { return scans(tc.result) >= 1, nil })
			}
			if tc.result == ec2loop.ResultSuccess {
				waitFor(t, "the InstanceWithoutNode event", func() (bool, error) {
					evs, err := admin.EventsV1().Events(lease.NodeLeaseNamespace).List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, err
					}
					found := false
					for _, e := range evs.Items {
						if e.Reason != ec2loop.ReasonInstanceWithoutNode {
							continue
						}
						if e.Regarding.Name == joined || strings.Contains(e.Note, fmt.Sprintf("i-joined%d ", i)) {
							return false, fmt.Errorf("an event about the instance that has a Node: %s", e.Note)
						}
						found = found || (e.Regarding.Name == orphan && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, fmt.Sprintf("i-orphan%d", i)))
					}
					return found, nil
				})
			}
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("controller: %v", err)
			}
		})
	}
}

// TestOnlyTheLeaderScans runs two controller replicas with leader election on a real control
// plane, each with its EC2 loop, its own user and its own fake AWS, as two pods of the Deployment
// with one IAM role would run: only the leader scans. The standby's fake records no
// DescribeInstances call, and the API server's audit log holds the scans' Node LISTs (user agent
// "ec2-loop") of the leader's user only, though the standby's loop ticked as often.
func TestOnlyTheLeaderScans(t *testing.T) {
	env.DeleteNodesAndLeases(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := env.AdminClient()
	const electionNS = "ec2loop-election"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: electionNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	type replica struct {
		user    string
		cloud   *awsfake.Cloud
		c       *controller.Controller
		mu      sync.Mutex
		results map[string]int // scans by Result
		done    chan error
	}
	var replicas []*replica
	for _, name := range []string{"a", "b"} {
		r := &replica{user: "nodekeeper-replica-" + name, cloud: awsfake.New(), results: map[string]int{}, done: make(chan error, 1)}
		r.cloud.Instances = []ec2types.Instance{tagged("i-orphan-"+name, "ip-10-2-0-"+name+".ec2.internal", time.Now().Add(-time.Hour))}
		cfg := env.UserConfig(r.user, "system:masters")
		reg := prometheus.NewRegistry()
		// Long terms: the test must not see leadership move on a loaded machine.
		c, err := controller.NewForConfig(cfg, controller.Options{Registry: reg, LeaderElection: controller.LeaderElectionOptions{
			Enabled: true, Namespace: electionNS, Name: "nodekeeper-ec2loop", Identity: r.user,
			LeaseDuration: 2 * time.Minute, RenewDeadline: 90 * time.Second, RetryPeriod: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		r.c = c
		deps, err := ec2loop.NewDeps(cfg, r.cloud, c.Leading)
		if err != nil {
			t.Fatal(err)
		}
		loop, err := ec2loop.New(deps, ec2loop.Options{Cluster: "prod", Registry: reg, Interval: 100 * time.Millisecond, Timeout: time.Hour,
			OnScan: func(s ec2loop.Scan) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.results[s.Result]++
			}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { r.done <- ec2loop.RunBeside(ctx, loop, c.Run) }()
		replicas = append(replicas, r)
	}
	count := func(r *replica, result string) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.results[result]
	}
	ticks := func(r *replica) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, c := range r.results {
			n += c
		}
		return n
	}
	var leader, standby *replica
	waitFor(t, "one replica leading and scanning, the other ticking as a standby", func() (bool, error) {
		a, b := replicas[0], replicas[1]
		switch {
		case a.c.Leading() && !b.c.Leading():
			leader, standby = a, b
		case b.c.Leading() && !a.c.Leading():
			leader, standby = b, a
		default:
			return false, nil
		}
		return count(leader, ec2loop.ResultSuccess) >= 2 && ticks(standby) >= 2, nil
	})
	ec2Loop := func(e testenv.AuditEvent) bool {
		return e.Verb == "list" && e.Resource() == "nodes" && strings.Contains(e.UserAgent, "ec2-loop")
	}
	waitFor(t, "the leader's scans in the audit log", func() (bool, error) {
		n := 0
		for _, e := range env.AuditEvents(t, "ec2-loop", ec2Loop) {
			if e.User.Username == leader.user {
				n++
			}
		}
		return n >= 2, nil
	})
	cancel()
	for _, r := range replicas {
		if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("replica %s: %v", r.user, err)
		}
	}
	if n := leader.cloud.Calls(instances.PermDescribeInstances); n < 2 {
		t.Errorf("the leader's AWS recorded %d DescribeInstances calls, want at least 2", n)
	}
	if n := standby.cloud.Calls(instances.PermDescribeInstances); n != 0 {
		t.Errorf("the standby called DescribeInstances %d times in %d ticks: only the leader scans", n, ticks(standby))
	}
	if n := count(standby, ec2loop.ResultSuccess); n != 0 {
		t.Errorf("the standby completed %d scans", n)
	}
	for _, e := range env.AuditEvents(t, "ec2-loop", ec2Loop) {
		if e.User.Username == standby.user {
			t.Errorf("a scan's Node LIST by the standby %s: %s", standby.user, e)
		}
	}
}
