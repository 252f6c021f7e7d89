package integration

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// (a) Deleting a Node makes the real garbage collector delete its lease (seed 001, "Node Delete
// 시 어떤 동작이 이루어지는가": kube-controller-manager's generic-garbage-collector deletes
// kube-node-lease/<node> right after `kubectl delete node`).
func TestNodeDeletionGarbageCollectsLease(t *testing.T) {
	name := nodeName()
	k := startKubelet(t, env.NewFleet(t), name, kubeletsim.Modern)
	waitLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))
	k.Stop() // a clean scale-in: the machine is gone before its Node is deleted

	t0 := time.Now()
	deleteNode(t, name)
	waitLease(t, name, 30*time.Second, "garbage collection", absent)
	events := waitAudit(t, name, t0, "lease delete by the garbage collector", func(ev []testenv.AuditEvent) bool {
		return len(match(ev, "delete", "leases", garbageCollector, 200)) == 1
	})
	if del := match(events, "delete", "leases", "", 0); len(del) != 1 || del[0].ObjectRef.Namespace != kubeletsim.NodeLeaseNamespace {
		t.Errorf("want exactly one lease delete, by the garbage collector:\n%s", joinEvents(events))
	}
	holdLease(t, name, 3*time.Second, "absent", absent)
}

// (b) A 1.29+ kubelet that keeps running after its Node is deleted does not re-create its
// lease; it GETs the lease and the Node (404, 404) every renew interval (seed 001's kubelet log
// "Failed to get node when trying to set owner ref to the node lease" and audit 404s).
func TestModernZombieKeepsGettingButNeverRecreates(t *testing.T) {
	name := nodeName()
	k := startKubelet(t, env.NewFleet(t), name, kubeletsim.Modern)
	waitLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))

	deleteNode(t, name)
	waitLease(t, name, 30*time.Second, "garbage collection", absent)
	t0, before := time.Now(), k.Stats()

	const renewals = 6
	holdLease(t, name, renewals*k.Config().RenewInterval, "absent while the kubelet runs", absent)

	d := k.Stats().Sub(before)
	if d.LeaseCreate != 0 || d.LeaseUpdateCreated != 0 {
		t.Errorf("modern kubelet wrote a lease after its Node was deleted: %+v", d)
	}
	// About one GET of each per renewal; allow a renewal of jitter either way.
	if d.LeaseGetNotFound < renewals-2 || d.NodeGetNotFound < renewals-2 {
		t.Errorf("want ≥ %d lease and node GETs answered 404, got %+v", renewals-2, d)
	}
	if !k.Running() {
		t.Fatal("the zombie kubelet stopped")
	}
	// The audit log shows the zombie signature of DESIGN.md: GET lease 404 and GET node 404 by
	// system:node:<name>, no create, no successful write.
	user := "system:node:" + name
	events := waitAudit(t, name, t0, "zombie GETs", func(ev []testenv.AuditEvent) bool {
		return len(match(ev, "get", "leases", user, 404)) >= renewals-2 && len(match(ev, "get", "nodes", user, 404)) >= renewals-2
	})
	// Its only write attempts are PUTs of the lease it cached before the deletion, which the
	// UID precondition rejects (409); nothing it sends is ever accepted as a write.
	for _, e := range match(events, "", "leases", user, 0) {
		if e.Verb != "get" && e.Code() < 300 {
			t.Errorf("zombie kubelet wrote its lease: %s", e)
		}
	}
}

// (c) A pre-1.29 kubelet in the same situation re-creates an ownerless lease through
// create-on-update and renews it: the leak of kubernetes issue 109777 (seed 000).
// (d) When that kubelet then dies, the ownerless lease stays for good: the garbage collector
// keeps collecting other leases but never this one.
func TestLegacyKubeletLeaksLease(t *testing.T) {
	ctx := context.Background()
	fleet := env.NewFleet(t)
	name := nodeName()
	user := "system:node:" + name
	k := startKubelet(t, fleet, name, kubeletsim.Legacy)
	original := waitLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))

	var leaked *coordinationv1.Lease
	ok := t.Run("c: re-created ownerless and renewed", func(t *testing.T) {
		t0 := time.Now()
		deleteNode(t, name)
		waitAudit(t, name, t0, "lease delete by the garbage collector", func(ev []testenv.AuditEvent) bool {
			return len(match(ev, "delete", "leases", garbageCollector, 200)) == 1
		})
		leaked = waitLease(t, name, 10*time.Second, "re-created lease", func(l *coordinationv1.Lease) bool {
			return l != nil && l.UID != original.UID
		})
		if !ownerless(leaked) {
			t.Fatalf("re-created lease has owners %v; the leak has none", leaked.OwnerReferences)
		}
		// It keeps being renewed, by the same object.
		r0 := leaked.Spec.RenewTime.Time
		l := waitLease(t, name, 5*time.Second, "renewal", renewedAfter(r0))
		if l.UID != leaked.UID || !ownerless(l) {
			t.Fatalf("renewed lease changed: %s", testenv.DescribeLease(l))
		}
		if s := k.Stats(); s.LeaseUpdateCreated != 1 || s.LeaseCreate != 1 {
			t.Errorf("want one POST (registration) and one PUT answered 201 (the leak), got %+v", s)
		}
		// The audit log: the kubelet's update answered 201 created it.
		events := waitAudit(t, name, t0, "update answered 201", func(ev []testenv.AuditEvent) bool {
			return len(match(ev, "update", "leases", user, 201)) == 1
		})
		if c := match(events, "create", "leases", user, 0); len(c) != 0 {
			t.Errorf("the leak is created by an update, not a create: %s", joinEvents(c))
		}
	})
	if !ok {
		return
	}

	t.Run("d: survives the kubelet and the garbage collector", func(t *testing.T) {
		k.Stop() // the machine dies
		last, err := env.NodeLease(ctx, name)
		if err != nil || last == nil {
			t.Fatalf("leaked lease gone at machine death: %v", err)
		}
		// Unchanged for longer than its duration: expired, nobody renews it.
		holdLease(t, name, (leaseSeconds+1)*time.Second, "unchanged", func(l *coordinationv1.Lease) bool {
			return l != nil && l.UID == leaked.UID && l.ResourceVersion == last.ResourceVersion
		})
		// Several garbage collection passes: each one collects the lease of another deleted
		// Node (so the collector demonstrably runs), while the leak stays untouched.
		for pass := 1; pass <= 3; pass++ {
			other := nodeName()
			ok := startKubelet(t, fleet, other, kubeletsim.Modern)
			waitLease(t, other, 10*time.Second, "owned lease", testenv.OwnedByNode(ok.NodeUID()))
			ok.Stop()
			deleteNode(t, other)
			waitLease(t, other, 30*time.Second, "garbage collection of another node's lease", absent)
			l, err := env.NodeLease(ctx, name)
			if err != nil || l == nil {
				t.Fatalf("pass %d: leaked lease gone: %v", pass, err)
			}
			if l.UID != leaked.UID || l.ResourceVersion != last.ResourceVersion || !ownerless(l) {
				t.Fatalf("pass %d: leaked lease changed: %s", pass, testenv.DescribeLease(l))
			}
		}
		// It has expired and nobody will ever renew or collect it.
		l, _ := env.NodeLease(ctx, name)
		if age := time.Since(l.Spec.RenewTime.Time); age < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
			t.Errorf("leaked lease renewed %s ago; expected it expired after the passes", age)
		}
		if _, err := env.AdminClient().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Error("a Node appeared for the leaked lease")
		}
	})
}

// (e) Deleting only the lease of a live node: the kubelet re-creates it with its ownerReference
// (seed 001, "Lease 만 삭제한다면?": a create by system:node:<name> right after the delete).
// Both generations behave the same here, because their Node exists.
func TestLeaseDeletedKubeletRecreatesOwned(t *testing.T) {
	eachMode(t, func(t *testing.T, mode kubeletsim.Mode, k *kubeletsim.Kubelet) {
		ctx := context.Background()
		name := k.Name()
		old := waitLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(k.NodeUID()))

		t0 := time.Now()
		if err := env.AdminClient().CoordinationV1().Leases(kubeletsim.NodeLeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		l := waitLease(t, name, 10*time.Second, "re-created lease", func(l *coordinationv1.Lease) bool {
			return l != nil && l.UID != old.UID
		})
		if !testenv.OwnedByNode(k.NodeUID())(l) {
			t.Fatalf("re-created lease must be owned by the live Node %s: %s", k.NodeUID(), testenv.DescribeLease(l))
		}
		waitAudit(t, name, t0, "lease create by the kubelet", func(ev []testenv.AuditEvent) bool {
			return len(match(ev, "create", "leases", "system:node:"+name, 201)) == 1
		})
	})
}

// (f) Restarting a kubelet whose Node was deleted re-registers the Node and the lease gets an
// owner again (seed 001, "노드 재등록": `systemctl restart kubelet`). A modern kubelet creates
// a new owned lease; a legacy one adopts the ownerless lease it leaked. Either way the garbage
// collector can clean it up later, and the node lifecycle controller sees the Node Ready.
func TestRestartAfterNodeDeletion(t *testing.T) {
	eachMode(t, func(t *testing.T, mode kubeletsim.Mode, k *kubeletsim.Kubelet) {
		ctx := context.Background()
		name := k.Name()
		oldUID := k.NodeUID()
		waitLease(t, name, 10*time.Second, "owned lease", testenv.OwnedByNode(oldUID))

		deleteNode(t, name)
		var before *coordinationv1.Lease
		if mode == kubeletsim.Legacy {
			// The lease is leaked first (see TestLegacyKubeletLeaksLease).
			before = waitLease(t, name, 30*time.Second, "ownerless lease", ownerless)
		} else {
			waitLease(t, name, 30*time.Second, "garbage collection", absent)
		}

		t0 := time.Now()
		if err := k.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		newUID := k.NodeUID()
		if newUID == oldUID {
			t.Fatalf("restart kept the deleted Node's UID %s", oldUID)
		}
		node, err := env.AdminClient().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || node.UID != newUID {
			t.Fatalf("re-registered node: %v (uid %v, kubelet says %s)", err, node.GetUID(), newUID)
		}
		l := waitLease(t, name, 10*time.Second, "owner = re-registered node", testenv.OwnedByNode(newUID))
		user := "system:node:" + name
		if mode == kubeletsim.Legacy {
			if l.UID != before.UID {
				t.Errorf("legacy kubelet should adopt its leaked lease %s, got %s", before.UID, l.UID)
			}
			waitAudit(t, name, t0, "adoption by update", func(ev []testenv.AuditEvent) bool {
				return len(match(ev, "update", "leases", user, 200)) >= 1 && len(match(ev, "create", "leases", user, 0)) == 0
			})
		} else {
			waitAudit(t, name, t0, "node and lease creates by the kubelet", func(ev []testenv.AuditEvent) bool {
				return len(match(ev, "create", "nodes", user, 201)) == 1 && len(match(ev, "create", "leases", user, 201)) == 1
			})
		}
		// The lease now has an owner again: deleting the Node lets the GC collect it.
		k.Stop()
		deleteNode(t, name)
		waitLease(t, name, 30*time.Second, "garbage collection after re-adoption", absent)
	})
}

// eachMode runs test once per kubelet generation, in parallel subtests, each with a kubelet of
// its own running on a new node.
func eachMode(t *testing.T, test func(t *testing.T, mode kubeletsim.Mode, k *kubeletsim.Kubelet)) {
	for _, mode := range []kubeletsim.Mode{kubeletsim.Modern, kubeletsim.Legacy} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			test(t, mode, startKubelet(t, env.NewFleet(t), nodeName(), mode))
		})
	}
}

// The node lifecycle controller keeps a heartbeating node Ready, turns a dead one Unknown after
// node-monitor-grace-period, and a restart brings it back: the simulator's node status and
// leases are what the real controller expects.
func TestNodeLifecycleSeesSimulatedKubelets(t *testing.T) {
	ctx := context.Background()
	name := nodeName()
	k := startKubelet(t, env.NewFleet(t), name, kubeletsim.Modern)
	readyIs := func(want corev1.ConditionStatus, timeout time.Duration) {
		t.Helper()
		var got corev1.ConditionStatus
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			n, err := env.AdminClient().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					got = c.Status
				}
			}
			return got == want, nil
		})
		if err != nil {
			t.Fatalf("Ready = %s, want %s within %s: %v", got, want, timeout, err)
		}
	}
	readyIs(corev1.ConditionTrue, 5*time.Second)
	k.Stop()
	// node-monitor-grace-period (10 s here) plus the monitor period.
	readyIs(corev1.ConditionUnknown, 30*time.Second)
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	readyIs(corev1.ConditionTrue, 20*time.Second)
}
