package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(replicaMain())
	}
	// The audit assertions read every write to a node lease with its bodies (the exact lease
	// version a DELETE's preconditions named) and the metadata of every lease and Node request.
	testenv.RunMain(m, testenv.MainOptions{
		Options:                 testenv.Options{ControllerManager: true, AuditPolicy: testenv.AuditNodeLeaseWrites},
		BenchmarksStartTheirOwn: true,
	}, &env)
}

var userSeq atomic.Int64

// controllerUser returns a distinct system:masters identity per test, so that the audit log
// tells this test's controller's requests apart from everything else.
func controllerUser(t *testing.T) (string, *rest.Config) {
	user := fmt.Sprintf("nodekeeper-controller-%d-%s", userSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(user) > 60 {
		user = user[:60]
	}
	return user, env.UserConfig(user, "system:masters")
}

// reset removes every Node and node lease so each test starts from an empty kube-node-lease.
func reset(t *testing.T) { env.DeleteNodesAndLeases(t) }

// harness runs one controller in-process for a test.
type harness struct {
	t      *testing.T
	c      *Controller
	user   string
	cancel context.CancelFunc
	done   chan error

	mu        sync.Mutex
	decisions []Decision
	hookMu    sync.Mutex
	hook      func(l *coordinationv1.Lease)
}

func startController(t *testing.T, opts Options) *harness {
	t.Helper()
	user, cfg := controllerUser(t)
	return startControllerAs(t, user, cfg, opts, nil)
}

// startControllerAs starts a controller with cfg's identity; clk, when set, is its clock.
func startControllerAs(t *testing.T, user string, cfg *rest.Config, opts Options, clk clock.WithTicker) *harness {
	t.Helper()
	h := &harness{t: t, user: user, done: make(chan error, 1)}
	opts.OnDecision = h.record
	deps, err := NewDeps(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	deps.Clock = clk
	c, err := New(deps, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.beforeAction = h.runHook
	h.c = c
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- c.Run(ctx) }()
	t.Cleanup(func() { h.stop() })
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			select {
			case err := <-h.done:
				h.done <- err
				return false, fmt.Errorf("controller exited: %v", err)
			default:
			}
			return c.Synced() && (!opts.LeaderElection.Enabled || c.Leading()), nil
		}); err != nil {
		t.Fatalf("controller did not start: %v", err)
	}
	return h
}

func (h *harness) stop() error {
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(30 * time.Second):
		h.t.Error("controller did not stop within 30s")
		return nil
	}
}

func (h *harness) record(d Decision) {
	h.mu.Lock()
	h.decisions = append(h.decisions, d)
	h.mu.Unlock()
}

// setHook runs f after a lease was classified for an action and before the action starts.
func (h *harness) setHook(f func(l *coordinationv1.Lease)) {
	h.hookMu.Lock()
	h.hook = f
	h.hookMu.Unlock()
}

// beforeActionOnce runs f the first time the controller is about to act on lease name, between
// the classification from its cache and its request: the moment the races are staged at.
func (h *harness) beforeActionOnce(name string, f func()) {
	var once sync.Once
	h.setHook(func(l *coordinationv1.Lease) {
		if l.Name == name {
			once.Do(f)
		}
	})
}

func (h *harness) runHook(l *coordinationv1.Lease) {
	h.hookMu.Lock()
	f := h.hook
	h.hookMu.Unlock()
	if f != nil {
		f(l)
	}
}

func (h *harness) outcomes(name string) []deleter.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []deleter.Outcome
	for _, d := range h.decisions {
		if d.Lease == name {
			out = append(out, d.Outcome)
		}
	}
	return out
}

func (h *harness) count(o deleter.Outcome) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, d := range h.decisions {
		if d.Outcome == o {
			n++
		}
	}
	return n
}

// metric reads one series of the controller's registry, e.g. ("nodekeeper_leases", "class",
// "zombie"); 0 when it is not served.
func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	samples, err := promscrape.Gather(h.c.Registry())
	if err != nil {
		h.t.Fatal(err)
	}
	return promscrape.Sum(samples, name, labels...)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
	}
}

func getLease(name string) (*coordinationv1.Lease, error) {
	return env.AdminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(context.Background(), name, metav1.GetOptions{})
}

func leaseGone(name string) func() (bool, error) {
	return func() (bool, error) {
		_, err := getLease(name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

// seedLeaked creates n leaked leases (no Node, no owner, renewed `idle` ago).
func seedLeaked(t testing.TB, prefix string, n int, idle time.Duration) []string {
	t.Helper()
	return env.SeedLeakedLeases(t, prefix, n, time.Now().Add(-idle))
}

// createLease writes a kubelet-shaped lease (holder = name) renewed at renewTime
// (testenv.CreateNodeLease).
func createLease(t *testing.T, name string, renewTime time.Time, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	t.Helper()
	return env.CreateNodeLease(t, name, renewTime, owners...)
}

func createNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	return env.CreateNode(t, name)
}

func renewLease(t *testing.T, name string) {
	t.Helper()
	c := env.AdminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace)
	// The controller may adopt the lease between the read and the write; a kubelet then reads again
	// and renews, and so does this helper.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := c.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.RenewTime = ptr.To(metav1.NowMicro())
		_, err = c.Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

func adminClient() kubernetes.Interface { return env.AdminClient() }

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// ensureNamespace creates namespace name unless it exists.
func ensureNamespace(t testing.TB, name string) {
	t.Helper()
	_, err := adminClient().CoreV1().Namespaces().Create(context.Background(), nsObject(name), metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
}
