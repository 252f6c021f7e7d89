package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// garbageCollector is the identity of kube-controller-manager's garbage collector with
// --use-service-account-credentials, as in the seed's audit events.
const garbageCollector = "system:serviceaccount:kube-system:generic-garbage-collector"

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		ControllerManager: true,
		// A shorter grace period (default 50 s) only speeds up the node lifecycle test; it
		// stays well above the 1 s renew interval of the tests' leases.
		ControllerManagerArgs: []string{"--node-monitor-grace-period=10s", "--node-monitor-period=1s"},
		// Leases and Nodes at Metadata level, like the seed's EKS audit events.
		AuditPolicy: testenv.AuditLeasesAndNodes,
	}, &env)
}

// Short leases keep the tests fast without changing what is under test: renewals every second
// instead of every ten, same code paths. The garbage collector and the API server's
// create-on-update do not depend on the lease duration at all.
const leaseSeconds = 4

// nodeName gives each test its own EC2-style node name.
func nodeName() string { return testenv.UniqueNodeName(29, "ap-northeast-2.compute.internal") }

func startKubelet(t *testing.T, f *kubeletsim.Fleet, name string, mode kubeletsim.Mode) *kubeletsim.Kubelet {
	t.Helper()
	k, err := f.Start(context.Background(), kubeletsim.Config{Name: name, Mode: mode, LeaseDurationSeconds: leaseSeconds, Zone: "ap-northeast-2a"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// waitLease polls until cond holds for the lease (nil when absent).
func waitLease(t *testing.T, name string, timeout time.Duration, what string, cond func(*coordinationv1.Lease) bool) *coordinationv1.Lease {
	t.Helper()
	return env.WaitNodeLease(t, name, timeout, what, cond)
}

// holdLease asserts that cond holds at every poll for d.
func holdLease(t *testing.T, name string, d time.Duration, what string, cond func(*coordinationv1.Lease) bool) {
	t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		l, err := env.NodeLease(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !cond(l) {
			t.Fatalf("lease %s: %s no longer holds: %s", name, what, testenv.DescribeLease(l))
		}
	}
}

func absent(l *coordinationv1.Lease) bool { return l == nil }

func ownerless(l *coordinationv1.Lease) bool { return l != nil && len(l.OwnerReferences) == 0 }

// renewedAfter holds once the lease exists and was renewed after t0.
func renewedAfter(t0 time.Time) func(*coordinationv1.Lease) bool {
	return func(l *coordinationv1.Lease) bool {
		return l != nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(t0)
	}
}

func deleteNode(t *testing.T, name string) {
	t.Helper()
	if err := env.AdminClient().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete node %s: %v", name, err)
	}
}

// auditEvents returns the completed audit events about name (lease or node) received at or
// after since.
func auditEvents(t *testing.T, name string, since time.Time) []testenv.AuditEvent {
	t.Helper()
	return env.AuditEvents(t, name, func(e testenv.AuditEvent) bool { return e.Name() == name && !e.Received.Before(since) })
}

// match selects events by verb, resource, user and response code ("" / 0 match anything).
func match(events []testenv.AuditEvent, verb, resource, user string, code int) []testenv.AuditEvent {
	var out []testenv.AuditEvent
	for _, e := range events {
		if (verb == "" || e.Verb == verb) && (resource == "" || e.Resource() == resource) &&
			(user == "" || e.User.Username == user) && (code == 0 || e.Code() == code) {
			out = append(out, e)
		}
	}
	return out
}

// waitAudit polls the audit log until want holds for the events about name since t0.
func waitAudit(t *testing.T, name string, since time.Time, what string, want func([]testenv.AuditEvent) bool) []testenv.AuditEvent {
	t.Helper()
	var events []testenv.AuditEvent
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		events = auditEvents(t, name, since)
		return want(events), nil
	})
	if err != nil {
		t.Fatalf("audit log: no %s for %s; events:\n%s", what, name, joinEvents(events))
	}
	return events
}

func joinEvents(events []testenv.AuditEvent) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}
