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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// TestStripLeaseKeepsWhatClassificationReads: the cache transform must not change any verdict.
func TestStripLeaseKeepsWhatClassificationReads(t *testing.T) {
	now := time.Now()
	name := "ip-10-0-0-1.ec2.internal"
	mk := func() *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: lease.NodeLeaseNamespace, UID: "u", ResourceVersion: "7",
				CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
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
	nodes := []*lease.NodeRef{nil, {Name: name, UID: "n"}, {Name: name, UID: "other"}}
	for _, owned := range []bool{true, false} {
		for _, node := range nodes {
			orig := mk()
			if !owned {
				orig.OwnerReferences = nil
			}
			obj, err := stripLease(orig.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			stripped := obj.(*coordinationv1.Lease)
			for _, at := range []time.Time{now, now.Add(2 * time.Hour)} {
				a := lease.Classify(orig, node, at, lease.Options{})
				b := lease.Classify(stripped, node, at, lease.Options{})
				if a != b {
					t.Errorf("owned=%v node=%v: verdict changed by the transform:\n%+v\n%+v", owned, node, a, b)
				}
			}
			if stripped.ManagedFields != nil || stripped.Labels != nil || stripped.Annotations != nil {
				t.Error("transform kept managedFields, labels or annotations")
			}
			if stripped.UID != "u" || stripped.ResourceVersion != "7" {
				t.Error("transform lost the UID or resourceVersion the delete preconditions need")
			}
		}
	}
	if internDuration(40) != internDuration(40) {
		t.Error("durations are not shared")
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
	if err := o.complete(nil); err == nil {
		t.Error("lease duration shorter than the renew deadline accepted")
	}
	t.Setenv("POD_NAMESPACE", "from-env")
	o = LeaderElectionOptions{Enabled: true}
	if err := o.complete(&restConfigForUnit); err != nil {
		t.Fatal(err)
	}
	if o.Namespace != "from-env" || o.Name != DefaultElectionID || o.Identity == "" || o.Config == nil || o.Config.Timeout != DefaultRenewDeadline/2 {
		t.Errorf("defaults: %+v", o)
	}
}

var restConfigForUnit = rest.Config{Host: "https://127.0.0.1:1"}
