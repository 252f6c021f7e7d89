package kubeletsim

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// legacyLease is the node lease heartbeat of kubelets before 1.29 (component-helpers ≤ v0.28),
// written from its observable behaviour so that the leak it causes can be reproduced:
//
//   - It renews by PUTting the lease it last wrote, without a GET. When the garbage collector has
//     deleted that lease (its Node is gone), the PUT carries the old UID, whose precondition
//     fails: 409 Conflict.
//   - On a conflict it re-reads the lease; on 404 it only creates one if setOwner succeeds, and
//     setOwner fails because the Node is gone, so it creates nothing and has no base lease.
//   - Its next attempt builds a lease from scratch, ignores setOwner's error — the bug of issue
//     109777 — and PUTs it. A PUT without UID or resourceVersion for a missing lease is a
//     create-on-update: 201, a new lease with no ownerReference that no garbage collector owns.
//   - From then on it renews that ownerless lease (GET node 404, PUT 200) for as long as it runs,
//     and when its machine dies the lease stays forever.
//
// Kubernetes PR 119661 (1.29) made the controller skip the write when setOwner fails; the
// Modern mode runs that fixed upstream controller.
type legacyLease struct {
	client        coordclient.LeaseInterface
	name          string
	duration      int32
	setOwner      lease.ProcessLeaseFunc
	onRepeatedErr func()
	clock         clock.Clock

	// last is the lease as the API server returned it on the last successful write.
	last *coordinationv1.Lease
}

const (
	legacyUpdateAttempts = 5
	legacyMaxBackoff     = 7 * time.Second
)

// sync is one heartbeat.
func (l *legacyLease) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if l.last != nil {
		err := l.renew(ctx, l.last)
		if err == nil {
			return
		}
		logger.Info("failed to update lease using latest lease, fallback to ensure lease", "err", err)
	}
	current, created := l.ensureWithBackoff(ctx)
	l.last = current
	if current != nil && !created {
		if err := l.renew(ctx, current); err != nil {
			logger.Error(err, "Will retry updating lease")
		}
	}
}

// renew PUTs base with a fresh renewTime, re-reading the lease after a conflict.
func (l *legacyLease) renew(ctx context.Context, base *coordinationv1.Lease) error {
	logger := klog.FromContext(ctx)
	for attempt := 0; attempt < legacyUpdateAttempts; attempt++ {
		// The pre-1.29 bug: the owner error is dropped and the lease is written anyway.
		desired, _ := l.desired(base)
		written, err := l.client.Update(ctx, desired, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			l.last = written
			return nil
		}
		logger.Error(err, "Failed to update lease")
		if apierrors.IsConflict(err) {
			base, _ = l.ensureWithBackoff(ctx)
			continue
		}
		if attempt > 0 && l.onRepeatedErr != nil {
			l.onRepeatedErr()
		}
	}
	return fmt.Errorf("failed %d attempts to update lease", legacyUpdateAttempts)
}

// ensureWithBackoff retries ensure with doubling waits (200 ms … 7 s) until it gets an answer
// or ctx ends. It returns the lease (nil if none could be made) and whether it created it.
func (l *legacyLease) ensureWithBackoff(ctx context.Context) (*coordinationv1.Lease, bool) {
	wait := 100 * time.Millisecond
	for {
		current, created, err := l.ensure(ctx)
		if err == nil {
			return current, created
		}
		wait = min(2*wait, legacyMaxBackoff)
		klog.FromContext(ctx).Error(err, "Failed to ensure lease exists, will retry", "interval", wait)
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(wait):
		}
	}
}

// ensure GETs the lease and creates it when missing — but only with an owner: if setOwner fails
// it creates nothing and reports no error, leaving the caller without a lease.
func (l *legacyLease) ensure(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	current, err := l.client.Get(ctx, l.name, metav1.GetOptions{})
	switch {
	case err == nil:
		return current, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, err
	}
	fresh, err := l.desired(nil)
	if err != nil {
		return nil, false, nil
	}
	created, err := l.client.Create(ctx, fresh, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, false, err
	}
	return created, true, nil
}

// desired is base (or a new lease when base is nil) with a fresh renewTime, passed through
// setOwner. Like v0.28 it sets the duration only on new leases.
func (l *legacyLease) desired(base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	var out *coordinationv1.Lease
	if base != nil {
		out = base.DeepCopy()
	} else {
		out = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: NodeLeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(l.name),
				LeaseDurationSeconds: ptr.To(l.duration),
			},
		}
	}
	out.Spec.RenewTime = &metav1.MicroTime{Time: l.clock.Now()}
	return out, l.setOwner(out)
}
