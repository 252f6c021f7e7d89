package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/testenv"
)

var env *testenv.Env

// auditPolicy records leases and nodes at Metadata level, like the seed's EKS audit events, and
// nothing else, so the log stays small enough to re-read in every test.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: ""
    resources: ["nodes"]
- level: None
`

// garbageCollector is the identity of kube-controller-manager's garbage collector with
// --use-service-account-credentials, as in the seed's audit events.
const garbageCollector = "system:serviceaccount:kube-system:generic-garbage-collector"

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		ControllerManager: true,
		// A shorter grace period (default 50 s) only speeds up the node lifecycle test; it
		// stays well above the 1 s renew interval of the tests' leases.
		ControllerManagerArgs: []string{"--node-monitor-grace-period=10s", "--node-monitor-period=1s"},
		AuditPolicy:           auditPolicy,
	}, &env)
}

// Short leases keep the tests fast without changing what is under test: renewals every second
// instead of every ten, same code paths. The garbage collector and the API server's
// create-on-update do not depend on the lease duration at all.
const leaseSeconds = 4

var nameSeq atomic.Int64

// nodeName gives each test its own EC2-style node name.
func nodeName() string {
	n := nameSeq.Add(1)
	return fmt.Sprintf("ip-10-29-%d-%d.ap-northeast-2.compute.internal", 100+n, time.Now().Nanosecond()%250+1)
}

func newFleet(t *testing.T) *kubeletsim.Fleet {
	f := kubeletsim.NewFleet(func(node string) *rest.Config { return env.UserConfig("system:node:"+node, "system:nodes") })
	t.Cleanup(f.StopAll)
	return f
}

func startKubelet(t *testing.T, f *kubeletsim.Fleet, name string, mode kubeletsim.Mode) *kubeletsim.Kubelet {
	t.Helper()
	k, err := f.Start(context.Background(), kubeletsim.Config{Name: name, Mode: mode, LeaseDurationSeconds: leaseSeconds, Zone: "ap-northeast-2a"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func getLease(ctx context.Context, c kubernetes.Interface, name string) (*coordinationv1.Lease, error) {
	l, err := c.CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// waitLease polls until cond holds for the lease (nil when absent).
func waitLease(t *testing.T, name string, timeout time.Duration, what string, cond func(*coordinationv1.Lease) bool) *coordinationv1.Lease {
	t.Helper()
	var last *coordinationv1.Lease
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := getLease(ctx, env.AdminClient(), name)
		if err != nil {
			return false, err
		}
		last = l
		return cond(l), nil
	})
	if err != nil {
		t.Fatalf("lease %s: waiting %s for %s: %v (last: %s)", name, timeout, what, err, describe(last))
	}
	return last
}

// holdLease asserts that cond holds at every poll for d.
func holdLease(t *testing.T, name string, d time.Duration, what string, cond func(*coordinationv1.Lease) bool) {
	t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		l, err := getLease(ctx, env.AdminClient(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !cond(l) {
			t.Fatalf("lease %s: %s no longer holds: %s", name, what, describe(l))
		}
	}
}

func describe(l *coordinationv1.Lease) string {
	if l == nil {
		return "absent"
	}
	return fmt.Sprintf("uid=%s owners=%v renew=%v", l.UID, l.OwnerReferences, l.Spec.RenewTime)
}

func absent(l *coordinationv1.Lease) bool { return l == nil }

func ownedBy(uid string) func(*coordinationv1.Lease) bool {
	return func(l *coordinationv1.Lease) bool {
		return l != nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].Kind == "Node" && string(l.OwnerReferences[0].UID) == uid
	}
}

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

// auditEvent is the part of an audit.k8s.io/v1 Event the tests look at.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

func (e auditEvent) String() string {
	return fmt.Sprintf("%s %s %s/%s %d by %s", e.RequestReceivedTimestamp.Format("15:04:05.000"), e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code, e.User.Username)
}

// auditEvents returns the completed audit events about name (lease or node) received at or
// after since. Lines are read whole whatever their length.
func auditEvents(t *testing.T, name string, since time.Time) []auditEvent {
	t.Helper()
	f, err := os.Open(env.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []auditEvent
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && strings.Contains(string(line), name) {
			var e auditEvent
			if jerr := json.Unmarshal(line, &e); jerr != nil {
				if errors.Is(err, io.EOF) {
					return out // the last line is still being written
				}
				t.Fatalf("audit log line: %v", jerr)
			}
			if e.Stage == "ResponseComplete" && e.ObjectRef.Name == name && !e.RequestReceivedTimestamp.Time.Before(since) {
				out = append(out, e)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return out
		}
	}
}

// match selects events by verb, resource, user and response code ("" / 0 match anything).
func match(events []auditEvent, verb, resource, user string, code int) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if (verb == "" || e.Verb == verb) && (resource == "" || e.ObjectRef.Resource == resource) &&
			(user == "" || e.User.Username == user) && (code == 0 || e.ResponseStatus.Code == code) {
			out = append(out, e)
		}
	}
	return out
}

// waitAudit polls the audit log until want holds for the events about name since t0.
func waitAudit(t *testing.T, name string, since time.Time, what string, want func([]auditEvent) bool) []auditEvent {
	t.Helper()
	var events []auditEvent
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		events = auditEvents(t, name, since)
		return want(events), nil
	})
	if err != nil {
		t.Fatalf("audit log: no %s for %s; events:\n%s", what, name, joinEvents(events))
	}
	return events
}

func joinEvents(events []auditEvent) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}
