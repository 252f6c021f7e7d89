package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// TestCompactLeaseKeepsWhatClassificationReads: the cache's compact form must not change any
// verdict, nor anything the deleter and events read.
func TestCompactLeaseKeepsWhatClassificationReads(t *testing.T) {
	now := time.Now()
	name := "ip-10-0-0-1.ec2.internal"
	base := func() *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: lease.NodeLeaseNamespace, UID: "u", ResourceVersion: "7",
				CreationTimestamp: metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second)),
				Labels:            map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "n"}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-time.Minute))),
			},
		}
	}
	variants := map[string]func(*coordinationv1.Lease){
		"kubelet lease":         func(*coordinationv1.Lease) {},
		"no owner":              func(l *coordinationv1.Lease) { l.OwnerReferences = nil },
		"foreign owner":         func(l *coordinationv1.Lease) { l.OwnerReferences[0].Kind = "Deployment" },
		"controller owner flag": func(l *coordinationv1.Lease) { l.OwnerReferences[0].Controller = ptr.To(true) },
		"two owners": func(l *coordinationv1.Lease) {
			l.OwnerReferences = append(l.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: "m"})
		},
		"other holder":          func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("x") },
		"no holder":             func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = nil },
		"no renew, no duration": func(l *coordinationv1.Lease) { l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = nil, nil },
		"acquire time":          func(l *coordinationv1.Lease) { l.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(now.Add(-time.Second))) },
		"no creation time":      func(l *coordinationv1.Lease) { l.CreationTimestamp = metav1.Time{} },
		"renewTime in the year 3000": func(l *coordinationv1.Lease) {
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)))
		},
	}
	nodes := []*lease.NodeRef{nil, {Name: name, UID: "n"}, {Name: name, UID: "other"}}
	for vname, mod := range variants {
		orig := base()
		mod(orig)
		obj, err := compactLease(orig.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		cl := obj.(*cachedLease)
		back := cl.lease(new(coordinationv1.Lease))
		if back.Name != orig.Name || back.Namespace != orig.Namespace || back.UID != orig.UID || back.ResourceVersion != orig.ResourceVersion {
			t.Errorf("%s: identity changed: %+v", vname, back.ObjectMeta)
		}
		for _, node := range nodes {
			for _, at := range []time.Time{now, now.Add(2 * time.Hour)} {
				a := lease.Classify(orig, node, at, lease.Options{})
				b := lease.Classify(back, node, at, lease.Options{})
				if a.Class != b.Class || a.Reason != b.Reason || !a.RecheckAt.Equal(b.RecheckAt) || a.Expired != b.Expired ||
					!a.LastActivity.Equal(b.LastActivity) || a.RenewAge != b.RenewAge {
					t.Errorf("%s, node %v: verdict changed by the cache:\n%+v\n%+v", vname, node, a, b)
				}
			}
		}
		if m, err := meta.Accessor(cl); err != nil || m.GetName() != name || m.GetNamespace() != lease.NodeLeaseNamespace {
			t.Errorf("%s: meta.Accessor on the cached lease: %v %v", vname, m, err)
		}
		if cp := cl.DeepCopyObject().(*cachedLease); cp == cl || cp.name != cl.name {
			t.Errorf("%s: DeepCopyObject", vname)
		}
		if again, _ := compactLease(cl); again != cl {
			t.Errorf("%s: the transform is not idempotent", vname)
		}
	}
}

func TestErrorReason(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	tests := []struct {
		err  error
		want string
	}{
		{nil, "none"},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), "Forbidden"},
		{apierrors.NewConflict(gr, "x", errors.New("no")), "Conflict"},
		{apierrors.NewTooManyRequests("slow down", 1), "TooManyRequests"},
		{fmt.Errorf("wrapped: %w", context.Canceled), "Canceled"},
		{context.DeadlineExceeded, "Timeout"},
		{&url.Error{Op: "Get", URL: "https://127.0.0.1", Err: errors.New("connection refused")}, "ConnectionError"},
		{errors.New("something"), "Unknown"},
	}
	for _, tt := range tests {
		if got := errorReason(tt.err); got != tt.want {
			t.Errorf("errorReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestUntil(t *testing.T) {
	now := time.Now()
	if until(now, time.Time{}) != 0 {
		t.Error("zero time must mean no requeue")
	}
	if until(now, now.Add(-time.Second)) != time.Nanosecond {
		t.Error("a past moment must requeue at once")
	}
	if until(now, now.Add(time.Minute)) != time.Minute {
		t.Error("future moment")
	}
}

func TestLeaderElectionOptionsValidate(t *testing.T) {
	o := LeaderElectionOptions{Enabled: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second}
	if err := o.complete(); err == nil {
		t.Error("lease duration shorter than the renew deadline accepted")
	}
	t.Setenv("POD_NAMESPACE", "from-env")
	o = LeaderElectionOptions{Enabled: true}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	if cfg := o.electionConfig(&restConfigForUnit); o.Namespace != "from-env" || o.Name != DefaultElectionID || o.Identity == "" || cfg.Timeout != DefaultRenewDeadline/2 || cfg.QPS != 5 {
		t.Errorf("defaults: %+v", o)
	}
}

var restConfigForUnit = rest.Config{Host: "https://127.0.0.1:1"}

func TestLeaseStateBits(t *testing.T) {
	var s leaseState
	if s.class() != "" {
		t.Fatal("fresh state has a class")
	}
	for _, c := range lease.Classes() {
		s = s.withClass(c) | zombieReported
		if s.class() != c || s&zombieReported == 0 {
			t.Errorf("class %s: got %s, zombie bit %v", c, s.class(), s&zombieReported != 0)
		}
		s &^= zombieReported
		if s.class() != c {
			t.Errorf("clearing the zombie bit lost class %s", c)
		}
	}
}
