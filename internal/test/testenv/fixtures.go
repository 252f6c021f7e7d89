package testenv

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The fixtures the control-plane tests share: Nodes, node leases shaped as a kubelet writes them,
// names no other test uses, and waiting on a lease. They fail the test on error.

// CreateNodeLease writes a kubelet-shaped lease in kube-node-lease (holder = name, 40 s
// duration) renewed at renew, with the given owners; a lease meant to be old gets the creation
// time a kubelet's first renewal would have given it (BackdateIfOld).
func (e *Env) CreateNodeLease(t testing.TB, name string, renew time.Time, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	t.Helper()
	l, err := e.createNodeLease(name, renew, owners...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (e *Env) createNodeLease(name string, renew time.Time, owners ...metav1.OwnerReference) (*coordinationv1.Lease, error) {
	l, err := e.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            ptr.To(metav1.NewMicroTime(renew)),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return e.BackdateIfOld(context.Background(), l)
}

// CreateNode creates an empty Node named name. It is not deleted when the test ends: a test that
// needs that registers its own cleanup (deleting a Node lets the garbage collector remove the
// leases it owns, which some tests are about).
func (e *Env) CreateNode(t testing.TB, name string) *corev1.Node {
	t.Helper()
	n, err := e.AdminClient().CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// DeleteNodesAndLeases deletes every Node and every lease in kube-node-lease, so that a test that
// counts them starts from an empty cluster.
func (e *Env) DeleteNodesAndLeases(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	admin := e.AdminClient()
	if err := admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// SeedLeakedLeases creates n leases leaked long ago, named prefix-<i>.ec2.internal and last
// renewed at renew (CreateNodeLease without owners, so backdated), with up to 32 creates in
// flight, and returns their names.
func (e *Env) SeedLeakedLeases(t testing.TB, prefix string, n int, renew time.Time) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d.ec2.internal", prefix, i)
	}
	if err := Parallel(n, 32, func(i int) error {
		_, err := e.createNodeLease(names[i], renew)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

// NodeConfig is the client configuration of the kubelet of node: user system:node:<node> in
// group system:nodes, as the Node authorizer and NodeRestriction expect (kubeletsim.NewFleet).
func (e *Env) NodeConfig(node string) *rest.Config {
	return e.UserConfig("system:node:"+node, "system:nodes")
}

// NodeLease reads kube-node-lease/name; it is nil, without error, when there is no such lease.
func (e *Env) NodeLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	l, err := e.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// NodeLeaseExists reports whether kube-node-lease/name exists.
func (e *Env) NodeLeaseExists(t testing.TB, name string) bool {
	t.Helper()
	l, err := e.NodeLease(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return l != nil
}

// NodeLeaseNames lists the leases in kube-node-lease by name.
func (e *Env) NodeLeaseNames(t testing.TB) map[string]bool {
	t.Helper()
	list, err := e.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range list.Items {
		names[l.Name] = true
	}
	return names
}

// WaitNodeLease polls kube-node-lease/name until cond holds for it (nil when absent) and returns
// it; after timeout it fails the test with what it waited for and the lease as last seen.
func (e *Env) WaitNodeLease(t testing.TB, name string, timeout time.Duration, what string, cond func(*coordinationv1.Lease) bool) *coordinationv1.Lease {
	t.Helper()
	var last *coordinationv1.Lease
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := e.NodeLease(ctx, name)
		if err != nil {
			return false, err
		}
		last = l
		return cond(l), nil
	})
	if err != nil {
		t.Fatalf("lease %s: waiting %s for %s: %v (last: %s)", name, timeout, what, err, DescribeLease(last))
	}
	return last
}

// DescribeLease is what a failing test says about a lease: its UID, owners and last renewal.
func DescribeLease(l *coordinationv1.Lease) string {
	if l == nil {
		return "absent"
	}
	return fmt.Sprintf("uid=%s owners=%v renew=%v", l.UID, l.OwnerReferences, l.Spec.RenewTime)
}

var nameSeq atomic.Int64

// UniqueNodeName returns an EC2-style node name (ip-10-<a>-<b>-<c>.<domain>) that no other call
// in this test binary returns, also across -count passes, so that each test's Nodes, leases and
// audit events are its own.
func UniqueNodeName(a int, domain string) string {
	n := nameSeq.Add(1)
	return fmt.Sprintf("ip-10-%d-%d-%d.%s", a, n/250, n%250+1, domain)
}

// FreeAddr is a 127.0.0.1 address with a port no one listens on at the moment, for a server a
// test starts (a metrics or health endpoint).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// CreateAWSNode creates a DaemonSet in kube-system shaped like the VPC CNI's aws-node (one
// aws-node container of image with env), as doctor and plan read it, and deletes it when the
// test ends. No pod runs: nothing schedules on a control plane without kubelets' pods.
func (e *Env) CreateAWSNode(t testing.TB, name, image string, env map[string]string) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"k8s-app": name}
	var envs []corev1.EnvVar
	for k, v := range env {
		envs = append(envs, corev1.EnvVar{Name: k, Value: v})
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "aws-node", Image: image, Env: envs}}},
			},
		},
	}
	client := e.AdminClient()
	created, err := client.AppsV1().DaemonSets(ds.Namespace).Create(context.Background(), ds, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AppsV1().DaemonSets(ds.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return created
}
