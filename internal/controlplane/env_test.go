package controlplane

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestStartStopLeavesNothing starts and tears down a full control plane twice and proves that no
// process and no directory survives either round.
func TestStartStopLeavesNothing(t *testing.T) {
	for round := 1; round <= 2; round++ {
		env, err := Start(context.Background(), Options{ControllerManager: true, AuditPolicy: metadataPolicy})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		pids, dir := env.PIDs(), env.Dir()
		if len(pids) != 3 {
			t.Fatalf("round %d: want 3 processes (etcd, kube-apiserver, kube-controller-manager), got %v", round, pids)
		}
		for _, pid := range pids {
			if !alive(pid) {
				t.Fatalf("round %d: process %d is not running before Stop", round, pid)
			}
		}
		env.Stop()
		env.Stop() // idempotent
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("round %d: process %d still running after Stop", round, pid)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: directory %s still exists after Stop (err=%v)", round, dir, err)
		}
	}
}

func alive(pid int) bool {
	// A zombie child would also answer kill(0); Stop waits for every child, so none should exist.
	return syscall.Kill(pid, 0) == nil
}

// startForTest starts a control plane of the test's own, stopped when the test ends.
func startForTest(t *testing.T, opts Options) *Env {
	t.Helper()
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	return env
}

const metadataPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// TestIdentitiesAndAudit checks what other packages rely on: client-certificate users are who
// they claim to be (RBAC and the Node authorizer see them), service accounts get working tokens,
// the audit log records them, and the API server survives a restart with its data.
func TestIdentitiesAndAudit(t *testing.T) {
	ctx := context.Background()
	env := startForTest(t, Options{AuditPolicy: metadataPolicy})

	// A kubelet identity may write its own lease (Node authorizer) but not another node's.
	kubelet := kubernetes.NewForConfigOrDie(env.UserConfig("system:node:n1", "system:nodes"))
	own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease}}
	if _, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubelet n1 creating its own lease: %v", err)
	}
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2", Namespace: corev1.NamespaceNodeLease}}
	if _, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("kubelet n1 creating n2's lease: want Forbidden, got %v", err)
	}

	// An unprivileged user is forbidden; the error names the verb and the resource.
	nobody := kubernetes.NewForConfigOrDie(env.UserConfig("jane"))
	_, err := nobody.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot list resource "nodes"`) {
		t.Fatalf("jane listing nodes: want Forbidden naming the verb and resource, got %v", err)
	}

	// A service account gets a token the API server accepts.
	saCfg, err := env.ServiceAccountConfig(ctx, "nodekeeper", "probe")
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(saCfg)
	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:nodekeeper:probe" {
		t.Fatalf("service account identity: got %q", got)
	}

	// The audit log names the kubelet as the actor of its lease create.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(env.AuditLogPath())
		return err == nil && strings.Contains(string(data), `"username":"system:node:n1"`), nil
	})
	if err != nil {
		t.Fatalf("audit log has no event from system:node:n1: %v", err)
	}

	// Data survives an API server restart (etcd keeps running).
	if err := env.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := env.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("lease after API server restart: %v", err)
	}
}

// TestNodeProxyNeverLeavesTheMachine proves the egress guard: a Node with a realistic EKS address
// cannot make the API server connect anywhere; the attempt is refused before any packet is sent.
func TestNodeProxyNeverLeavesTheMachine(t *testing.T) {
	ctx := context.Background()
	env := startForTest(t, Options{})
	admin := env.AdminClient()
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-1-2-3.us-west-2.compute.internal"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.1.2.3"},
		{Type: corev1.NodeHostName, Address: node.Name},
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy", "configz").DoRaw(ctx)
	if err == nil {
		t.Fatal("node proxy to 10.1.2.3 succeeded; it must be refused")
	}
	if got := env.RefusedEgress(); len(got) != 1 || got[0] != "10.1.2.3:10250" {
		t.Fatalf("refused egress: got %v, want [10.1.2.3:10250] (err from proxy: %v)", got, err)
	}
}

// AdminClient is testenv.Env's, for this package's own tests (which cannot import testenv).
func (e *Env) AdminClient() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.AdminConfig())
}
