package controller

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

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

// The informers' side of the controller: what the caches keep, and which keys their events queue.

// watchCaches sets the informers' transforms (compact leases, slim Nodes) and event handlers.
func (c *Controller) watchCaches() error {
	nodeTransform := cache.TransformFunc(slimNode)
	if c.opts.fullNodes {
		nodeTransform = stripManagedFields
	}
	if err := c.deps.Leases.SetTransform(compactLease); err != nil {
		return err
	}
	if err := c.deps.Nodes.SetTransform(nodeTransform); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{c.deps.Leases, c.deps.Nodes} {
		if err := inf.SetWatchErrorHandlerWithContext(c.watchError); err != nil {
			return err
		}
	}
	if _, err := c.deps.Leases.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueObj(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueObj(obj) },
		DeleteFunc: func(obj any) { c.leaseDeleted(obj) },
	}); err != nil {
		return err
	}
	// A Node's UID cannot change in an update, so only its arrival and departure matter.
	_, err := c.deps.Nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(obj) },
		DeleteFunc: func(obj any) { c.nodeChanged(obj) },
	})
	return err
}

// cachedLease returns the cached lease named name rebuilt as a Lease, or nil when there is none.
func (c *Controller) cachedLease(name string) (*coordinationv1.Lease, error) {
	obj, exists, err := c.deps.Leases.GetIndexer().GetByKey(lease.NodeLeaseNamespace + "/" + name)
	if err != nil || !exists {
		return nil, err
	}
	cl, ok := obj.(*cachedLease)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T in the lease cache", obj)
	}
	return cl.lease(new(coordinationv1.Lease)), nil
}

// nodeRef returns the cached Node named name, or nil.
func (c *Controller) nodeRef(name string) *lease.NodeRef {
	obj, exists, err := c.deps.Nodes.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return &lease.NodeRef{Name: m.GetName(), UID: m.GetUID()}
}

// classCounts classifies every cached lease now (for the per-class gauge), and counts the
// zombie leases that are still renewed (live zombie kubelets).
func (c *Controller) classCounts() (map[lease.Class]int, int) {
	counts := map[lease.Class]int{}
	live := 0
	if !c.synced.Load() {
		return counts, 0
	}
	now := c.clock.Now()
	var scratch coordinationv1.Lease // one Lease rebuilt per cached lease, not one allocated
	for _, obj := range c.deps.Leases.GetIndexer().List() {
		if cl, ok := obj.(*cachedLease); ok {
			l := cl.lease(&scratch)
			v := lease.ClassOf(l, c.nodeRef(l.Name), now, c.classify)
			counts[v.Class]++
			if v.Class == lease.Zombie && !v.Expired {
				live++
			}
		}
	}
	return counts, live
}

func (c *Controller) enqueue(name string) {
	if q := c.queue.Load(); q != nil {
		(*q).Add(name)
	}
}

func (c *Controller) enqueueObj(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		c.enqueue(m.GetName())
	}
}

func (c *Controller) leaseDeleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if _, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
		c.dropState(name) // a lease re-created under this name starts afresh
		c.enqueue(name)
	}
}

// nodeChanged re-classifies the lease named like a Node that arrived or left.
func (c *Controller) nodeChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if _, exists, _ := c.deps.Leases.GetIndexer().GetByKey(lease.NodeLeaseNamespace + "/" + key); exists {
		c.enqueue(key)
	}
}

// watchError counts a failed cache list or watch and logs it the way client-go would.
func (c *Controller) watchError(ctx context.Context, r *cache.Reflector, err error) {
	c.metrics.errors.WithLabelValues("list_watch").Inc()
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// stripManagedFields is the generic transform used for the full-Node comparison cache.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// slimNode keeps only what classification needs from a Node: its name and UID.
func slimNode(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{
			TypeMeta: m.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
				CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			},
		}, nil
	}
	return obj, nil
}
