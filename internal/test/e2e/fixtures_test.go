//go:build linux

package e2e

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// cluster is one test's lease population in kube-node-lease, one of each class that matters to
// gc and the controller.
type cluster struct {
	healthy string   // a Node and its lease, owned by it and renewed now
	zombie  string   // a lease renewed now whose Node does not exist: never deleted
	leaked  []string // leases without Node or owner, last renewed hours ago
}

// nodeName is an EC2-style node name no other test uses.
func nodeName() string { return testenv.UniqueNodeName(42, eksRegion+".compute.internal") }

// seedCluster creates one healthy Node and lease, one zombie lease and n leaked leases.
func seedCluster(t *testing.T, n int) cluster {
	t.Helper()
	c := cluster{healthy: nodeName(), zombie: nodeName()}
	node := env.CreateNode(t, c.healthy)
	t.Cleanup(func() {
		_ = env.AdminClient().CoreV1().Nodes().Delete(context.Background(), c.healthy, metav1.DeleteOptions{})
	})
	// An hour-long lease duration keeps it healthy however slowly the test runs; everything
	// else is as a kubelet writes it.
	_, err := env.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: c.healthy, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
		}}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(c.healthy),
			LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env.CreateNodeLease(t, c.zombie, time.Now())
	c.leaked = env.SeedLeakedLeases(t, testenv.UniqueNodeName(43, "leak"), n, time.Now().Add(-3*time.Hour))
	return c
}
