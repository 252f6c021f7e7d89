package testenv

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOwnedByNode: only the reference a kubelet writes (apiVersion v1, kind Node, the Node's
// UID, alone) counts; the copy this replaced in kubeletsim's tests took any kind with that UID.
func TestOwnedByNode(t *testing.T) {
	const uid = "3f6c0e8a-node"
	kubelet := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "ip-10-0-0-1.ec2.internal", UID: uid}
	with := func(refs ...metav1.OwnerReference) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1.ec2.internal", OwnerReferences: refs}}
	}
	other := func(f func(*metav1.OwnerReference)) metav1.OwnerReference {
		r := kubelet
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		l    *coordinationv1.Lease
		want bool
	}{
		{"the kubelet's reference", with(kubelet), true},
		{"absent lease", nil, false},
		{"no owner", with(), false},
		{"another Node", with(other(func(r *metav1.OwnerReference) { r.UID = "another" })), false},
		{"kind Pod with the Node's UID", with(other(func(r *metav1.OwnerReference) { r.Kind = "Pod" })), false},
		{"another group's Node", with(other(func(r *metav1.OwnerReference) { r.APIVersion = "example.com/v1" })), false},
		{"a second owner besides", with(kubelet, other(func(r *metav1.OwnerReference) { r.UID = "another" })), false},
	} {
		if got := OwnedByNode(uid)(tc.l); got != tc.want {
			t.Errorf("%s: OwnedByNode = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestParallel: every call runs once, no more than workers at a time, and the error returned is
// the one of the lowest index, whatever order the calls finish in.
func TestParallel(t *testing.T) {
	const n, workers = 200, 7
	var calls [n]atomic.Int32
	var inFlight, most atomic.Int32
	err := Parallel(n, workers, func(i int) error {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		calls[i].Add(1)
		if i%50 == 49 {
			return fmt.Errorf("call %d", i)
		}
		return nil
	})
	if err == nil || err.Error() != "call 49" {
		t.Errorf("Parallel = %v, want the error of call 49", err)
	}
	for i := range calls {
		if c := calls[i].Load(); c != 1 {
			t.Errorf("call %d ran %d times", i, c)
		}
	}
	if m := most.Load(); m > workers {
		t.Errorf("%d calls in flight at once, want at most %d", m, workers)
	}
	if err := Parallel(0, workers, func(int) error { return errors.New("called") }); err != nil {
		t.Errorf("Parallel over nothing = %v", err)
	}
}

func TestAccessesOf(t *testing.T) {
	tests := []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  []string
	}{
		{"none", nil, nil},
		{"core verbs", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}},
			[]string{"get nodes", "list nodes"}},
		{"group and subresource", []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"delete"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}},
			[]string{"delete leases.coordination.k8s.io", "get nodes/proxy"}},
		{"non-resource URL", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
			[]string{"get /metrics"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range accessesOf(tc.rules) {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
