package testenv

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The fixtures the control-plane tests share: a Node, and a node lease shaped as a kubelet
// writes it. They fail the test on error.

// CreateNodeLease writes a kubelet-shaped lease in kube-node-lease (holder = name, 40 s
// duration) renewed at renew, with the given owners; a lease meant to be old gets the creation
// time a kubelet's first renewal would have given it (BackdateIfOld).
func (e *Env) CreateNodeLease(t testing.TB, name string, renew time.Time, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	t.Helper()
	l, err := e.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            ptr.To(metav1.NewMicroTime(renew)),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = e.BackdateIfOld(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return l
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
