package controller

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// cachedLease is what the lease cache holds instead of a *coordinationv1.Lease: exactly the
// fields classification, the deleter and events read, in about a third of the memory. The lease
// cache is most of the controller's memory (tens of thousands of leases in clusters that leaked
// for a while), and a Lease carries a 250-byte ObjectMeta of mostly empty fields plus a separate
// ownerReference, time and holder allocation.
//
// The common kubelet lease — one ownerReference {v1, Node, <lease name>}, holder = name — is
// stored without any allocation beyond its strings; anything else keeps its ownerReferences.
// Cached objects are never mutated.
type cachedLease struct {
	name, uid, rv string
	holder        string // shares name's bytes when equal
	// Times as Unix seconds and nanoseconds, which (unlike UnixNano) hold any date exactly: a
	// renewTime centuries ahead must stay in the future, not wrap into the past.
	createdSec             int64
	renewSec, acquireSec   int64 // valid when flags&hasRenew, flags&hasAcquire
	renewNsec, acquireNsec int32
	duration               int32 // spec.leaseDurationSeconds; valid when flags&hasDuration
	flags                  uint8
	nodeOwnerUID           string                  // the UID of the one standard Node ownerReference
	owners                 []metav1.OwnerReference // any other ownerReferences, verbatim
}

const (
	hasRenew uint8 = 1 << iota
	hasAcquire
	hasDuration
	hasHolder
	hasNodeOwner
	hasCreated
)

// compactLease converts a lease for the cache (the informer transform). Anything that is not a
// Lease (a tombstone, an already compact lease) passes through.
func compactLease(obj any) (any, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return obj, nil
	}
	c := &cachedLease{name: l.Name, uid: string(l.UID), rv: l.ResourceVersion}
	if !l.CreationTimestamp.IsZero() {
		c.flags |= hasCreated
		c.createdSec = l.CreationTimestamp.Unix()
	}
	if h := l.Spec.HolderIdentity; h != nil {
		c.flags |= hasHolder
		c.holder = *h
		if c.holder == c.name {
			c.holder = c.name
		}
	}
	if t := l.Spec.RenewTime; t != nil {
		c.flags |= hasRenew
		c.renewSec, c.renewNsec = t.Unix(), int32(t.Nanosecond())
	}
	if t := l.Spec.AcquireTime; t != nil {
		c.flags |= hasAcquire
		c.acquireSec, c.acquireNsec = t.Unix(), int32(t.Nanosecond())
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil {
		c.flags |= hasDuration
		c.duration = *d
	}
	if len(l.OwnerReferences) == 1 && isStandardNodeOwner(l.Name, l.OwnerReferences[0]) {
		c.flags |= hasNodeOwner
		c.nodeOwnerUID = string(l.OwnerReferences[0].UID)
	} else if len(l.OwnerReferences) > 0 {
		c.owners = l.OwnerReferences
	}
	return c, nil
}

// isStandardNodeOwner is the reference a kubelet sets: {v1, Node, name, uid}, nothing else.
func isStandardNodeOwner(name string, r metav1.OwnerReference) bool {
	return r.APIVersion == "v1" && r.Kind == "Node" && r.Name == name &&
		r.Controller == nil && r.BlockOwnerDeletion == nil
}

// lease rebuilds the Lease into dst (reused by callers that classify many leases in a row) and
// returns it. The result shares slices with the cache: read it, never modify it.
func (c *cachedLease) lease(dst *coordinationv1.Lease) *coordinationv1.Lease {
	*dst = coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.name, Namespace: lease.NodeLeaseNamespace, UID: types.UID(c.uid), ResourceVersion: c.rv,
			OwnerReferences: c.owners,
		},
	}
	if c.flags&hasCreated != 0 {
		dst.CreationTimestamp = metav1.NewTime(time.Unix(c.createdSec, 0))
	}
	if c.flags&hasNodeOwner != 0 {
		dst.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: c.name, UID: types.UID(c.nodeOwnerUID)}}
	}
	if c.flags&hasHolder != 0 {
		h := c.holder
		dst.Spec.HolderIdentity = &h
	}
	if c.flags&hasRenew != 0 {
		t := metav1.NewMicroTime(time.Unix(c.renewSec, int64(c.renewNsec)))
		dst.Spec.RenewTime = &t
	}
	if c.flags&hasAcquire != 0 {
		t := metav1.NewMicroTime(time.Unix(c.acquireSec, int64(c.acquireNsec)))
		dst.Spec.AcquireTime = &t
	}
	if c.flags&hasDuration != 0 {
		d := c.duration
		dst.Spec.LeaseDurationSeconds = &d
	}
	return dst
}

// GetObjectMeta lets client-go's key functions and meta.Accessor read the name and namespace.
func (c *cachedLease) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: c.name, Namespace: lease.NodeLeaseNamespace, UID: types.UID(c.uid), ResourceVersion: c.rv}
}

// GetObjectKind and DeepCopyObject make cachedLease a runtime.Object for the informer's store.
func (c *cachedLease) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedLease) DeepCopyObject() runtime.Object {
	out := *c
	if c.owners != nil {
		out.owners = append([]metav1.OwnerReference(nil), c.owners...)
	}
	return &out
}
