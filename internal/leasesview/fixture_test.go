package leasesview

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// fixedNow is the clock of every pure test: output must never depend on the wall clock.
var fixedNow = time.Date(2026, 4, 5, 6, 0, 0, 0, time.UTC)

func micro(ago time.Duration) *metav1.MicroTime {
	t := metav1.NewMicroTime(fixedNow.Add(-ago))
	return &t
}

func nodeOwner(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// nodeLease is a lease as a kubelet writes it: holder = name, 40 s duration.
func nodeLease(name string, renewedAgo time.Duration, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: lease.NodeLeaseNamespace, UID: types.UID("lease-" + name),
			CreationTimestamp: metav1.NewTime(fixedNow.Add(-48 * time.Hour)),
			OwnerReferences:   owners,
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            micro(renewedAgo),
		},
	}
}

// fixture is one lease of every class plus the Nodes they are joined with.
func fixture() ([]*coordinationv1.Lease, map[string]types.UID) {
	nodes := map[string]types.UID{
		"ip-10-0-1-1.ec2.internal": "79d24559-25af-4dd8-8cf8-6b38865926b7",
		"ip-10-0-1-2.ec2.internal": "17528ac7-96fb-4ff3-9be6-c16aa5f6622d",
		"ip-10-0-1-3.ec2.internal": "aec4bd2d-97e2-444a-a7b7-42b30dcd498a",
		"ip-10-0-1-4.ec2.internal": "e0360822-7800-42c0-b655-d99dc015e58e", // re-created
	}
	other := nodeLease("ip-10-0-7-7.ec2.internal", 20*time.Second)
	other.Spec.HolderIdentity = ptr.To("some-controller")
	kcm := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system", UID: "lease-kcm",
			CreationTimestamp: metav1.NewTime(fixedNow.Add(-27 * time.Hour))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("cp-1_25b3572b-b4f2-44ed-af75-8599e7a8465b"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: micro(26 * time.Hour), RenewTime: micro(time.Second), LeaseTransitions: ptr.To[int32](3),
		},
	}
	sched := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system", UID: "lease-sched",
			CreationTimestamp: metav1.NewTime(fixedNow.Add(-27 * time.Hour))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("cp-2_bbeda1bd-4c1e-4b49-b0f5-f90af015bb46"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: micro(3 * time.Hour), RenewTime: micro(2 * time.Minute), LeaseTransitions: ptr.To[int32](7),
		},
	}
	identity := func(name, host string, renewedAgo time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("lease-" + name),
				CreationTimestamp: metav1.NewTime(fixedNow.Add(-28 * time.Hour)),
				Labels:            map[string]string{lease.APIServerIdentityLabel: "kube-apiserver", hostnameLabel: host}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(name + "_69b4bda2-594b-426b-b127-b96f5b4a7722"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: micro(renewedAgo),
			},
		}
	}
	empty := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "app-lock", Namespace: "default", UID: "lease-app",
		CreationTimestamp: metav1.NewTime(fixedNow.Add(-5 * time.Minute))}}
	leases := []*coordinationv1.Lease{
		nodeLease("ip-10-0-1-1.ec2.internal", 4*time.Second, nodeOwner("ip-10-0-1-1.ec2.internal", nodes["ip-10-0-1-1.ec2.internal"])),
		nodeLease("ip-10-0-1-2.ec2.internal", 3*time.Minute, nodeOwner("ip-10-0-1-2.ec2.internal", nodes["ip-10-0-1-2.ec2.internal"])),
		nodeLease("ip-10-0-1-3.ec2.internal", 2*time.Second),
		nodeLease("ip-10-0-1-4.ec2.internal", 9*time.Second, nodeOwner("ip-10-0-1-4.ec2.internal", "c0018b83-f500-4380-a845-a0ef082a0794")),
		nodeLease("ip-10-0-1-5.ec2.internal", 90*time.Second, nodeOwner("ip-10-0-1-5.ec2.internal", "3d65bed4-8734-4c75-bc6a-a72fd048f9cb")),
		nodeLease("ip-10-0-9-9.ec2.internal", 5*time.Second),
		nodeLease("ip-10-0-8-8.ec2.internal", 3*time.Hour),
		nodeLease("ip-10-0-8-1.ec2.internal", 30*24*time.Hour),
		other,
		kcm,
		sched,
		identity("apiserver-apb4cp4hnblpcjsgshanwtmkya", "cp-1", 5*time.Second),
		identity("apiserver-bn6uki7bzxisu7rqvlduui37nm", "cp-old", 3*time.Hour),
		empty,
	}
	return leases, nodes
}

func fixtureCandidates() []Candidate {
	return []Candidate{{
		Namespace: "kube-system", Name: "kube-controller-manager-cp-1", LeaseName: "kube-controller-manager",
		BinaryVersion: "1.37.2", EmulationVersion: "1.37", Strategy: "OldestEmulationVersion",
		RenewTime: micro(12 * time.Second), PingTime: micro(40 * time.Minute),
		CreationTimestamp: metav1.NewTime(fixedNow.Add(-27 * time.Hour)),
	}}
}

func fixedOptions() Options {
	return Options{Clock: testingclock.NewFakeClock(fixedNow), Lease: lease.Options{GracePeriod: time.Hour}}
}
