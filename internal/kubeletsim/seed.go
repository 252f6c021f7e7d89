package kubeletsim

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// SeedLeakedLease creates the lease a pre-1.29 kubelet leaves behind once its machine is gone:
// kube-node-lease/<name>, held by name, 40 s duration, no ownerReference, last renewed at
// renewTime. There is no Node and no kubelet; it is what clusters accumulate from past leaks.
// The creation timestamp is now (the API server sets it), and the lease is only as old as that:
// it is a zombie until the grace period has passed since its creation. SeedOldLeakedLease makes
// one that is really old.
func SeedLeakedLease(ctx context.Context, client Client, name string, renewTime time.Time) (*coordinationv1.Lease, error) {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, fmt.Errorf("kubeletsim: lease name %q: %v", name, msgs)
	}
	if renewTime.IsZero() {
		return nil, fmt.Errorf("kubeletsim: lease %q: renewTime is required", name)
	}
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: NodeLeaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](DefaultLeaseDurationSeconds),
			RenewTime:            &metav1.MicroTime{Time: renewTime},
		},
	}
	created, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Create(ctx, l, metav1.CreateOptions{FieldManager: "nodekeeper-kubeletsim"})
	if err != nil {
		return nil, fmt.Errorf("kubeletsim: seed leaked lease %s: %w", name, err)
	}
	return created, nil
}

// Backdater rewrites the creation time of an existing lease; testenv.Env implements it by
// rewriting the object in etcd, as only a restore could.
type Backdater interface {
	BackdateLease(ctx context.Context, namespace, name string, created time.Time) (*coordinationv1.Lease, error)
}

// SeedOldLeakedLease is SeedLeakedLease for a lease that leaked long ago: it is created, then its
// creationTimestamp is moved back to renewTime (a kubelet creates its lease with its first
// renewal). A lease merely created now with an old renewTime is only as old as its creation, the
// server-stamped time, and is not leaked until the grace period has passed since then.
func SeedOldLeakedLease(ctx context.Context, client Client, b Backdater, name string, renewTime time.Time) (*coordinationv1.Lease, error) {
	if _, err := SeedLeakedLease(ctx, client, name, renewTime); err != nil {
		return nil, err
	}
	l, err := b.BackdateLease(ctx, NodeLeaseNamespace, name, renewTime)
	if err != nil {
		return nil, fmt.Errorf("kubeletsim: seed leaked lease %s: %w", name, err)
	}
	return l, nil
}
