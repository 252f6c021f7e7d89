package controlplane

import (
	"context"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestHistoryReadsEveryVersionAndDeletion writes a lease twice through the API server, deletes
// it, and reads all of it back from etcd: the first version at its revision (decoded, with its
// resourceVersion), nothing at the delete's revision, the Node at that revision, and the delete
// itself with the exact version it removed — after the API server is stopped, which is how a
// fault proof reads etcd when the audit log has no event for a write.
func TestHistoryReadsEveryVersionAndDeletion(t *testing.T) {
	ctx := context.Background()
	env := startForTest(t, Options{KeepHistory: true})
	client := env.AdminClient()
	const ns, name = corev1.NamespaceNodeLease, "ip-10-9-9-9.history.internal"
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("first")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second := first.DeepCopy()
	second.Spec.HolderIdentity = ptr.To("second")
	if second, err = client.CoordinationV1().Leases(ns).Update(ctx, second, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &second.UID, ResourceVersion: &second.ResourceVersion},
	}); err != nil {
		t.Fatal(err)
	}
	firstRev, _ := strconv.ParseInt(first.ResourceVersion, 10, 64)

	// The first version is still there at its revision, though it was overwritten and deleted.
	v, err := env.StoredAt(ctx, LeaseKey(ns, name), firstRev)
	if err != nil || v == nil {
		t.Fatalf("StoredAt(first revision %d) = %v, %v; want the first version", firstRev, v, err)
	}
	obj, err := v.Decode()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := obj.(*coordinationv1.Lease)
	if !ok || got.UID != first.UID || got.ResourceVersion != first.ResourceVersion || ptr.Deref(got.Spec.HolderIdentity, "") != "first" {
		t.Fatalf("decoded %T %+v; want the first version (uid %s, resourceVersion %s, holder first)", obj, obj, first.UID, first.ResourceVersion)
	}

	env.StopAPIServer()
	dels, err := env.Deletions(ctx, LeasePrefix(ns))
	if err != nil {
		t.Fatal(err)
	}
	var del *Deletion
	for i := range dels {
		if dels[i].Previous.Key == LeaseKey(ns, name) {
			del = &dels[i]
		}
	}
	if del == nil || strconv.FormatInt(del.Previous.ModRevision, 10) != second.ResourceVersion {
		t.Fatalf("Deletions = %+v; want the delete of %s at resourceVersion %s", dels, name, second.ResourceVersion)
	}
	if v, err := env.StoredAt(ctx, LeaseKey(ns, name), del.Revision); err != nil || v != nil {
		t.Errorf("StoredAt(delete revision %d) = %+v, %v; want nothing", del.Revision, v, err)
	}
	if v, err := env.StoredAt(ctx, LeaseKey(ns, name), del.Revision-1); err != nil || v == nil || v.ModRevision != del.Previous.ModRevision {
		t.Errorf("StoredAt(revision before the delete) = %+v, %v; want the second version", v, err)
	}
	if v, err := env.StoredAt(ctx, NodeKey(name), del.Revision); err != nil || v == nil {
		t.Errorf("StoredAt(Node at the delete's revision) = %+v, %v; want the Node", v, err)
	}
	// The marker that ends the history is gone again, and history can be read twice.
	again, err := env.Deletions(ctx, LeasePrefix(ns))
	if err != nil || len(again) != len(dels) {
		t.Errorf("second Deletions = %d deletions, %v; want %d", len(again), err, len(dels))
	}
	stopped := time.Now()
	env.Stop()
	t.Logf("stopped the rest in %s", time.Since(stopped).Round(time.Millisecond))
}
