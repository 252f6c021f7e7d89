package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

func ownerRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// eventFor returns the reasons of the events recorded about the lease named name.
func eventsFor(t *testing.T, name string) []string {
	t.Helper()
	evs, err := adminClient().CoreV1().Events(lease.NodeLeaseNamespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason)
	}
	return out
}

func hasEvent(t *testing.T, name, reason string) func() (bool, error) {
	return func() (bool, error) { return slices.Contains(eventsFor(t, name), reason), nil }
}

// startZombie runs a pre-1.29 kubelet, deletes its Node, and waits until the garbage collector
// has removed the owned lease and the kubelet has re-created it without an owner.
func startZombie(t *testing.T, fleet *kubeletsim.Fleet, name string, leaseSeconds int32) *kubeletsim.Kubelet {
	t.Helper()
	ctx := context.Background()
	k, err := fleet.Start(ctx, kubeletsim.Config{Name: name, Mode: kubeletsim.Legacy, LeaseDurationSeconds: leaseSeconds})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the zombie's lease to be owned", func() (bool, error) {
		l, err := getLease(name)
		return err == nil && len(l.OwnerReferences) == 1, nil
	})
	if err := adminClient().CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the legacy kubelet to re-create its lease without owner", func() (bool, error) {
		l, err := getLease(name)
		return err == nil && len(l.OwnerReferences) == 0, nil
	})
	return k
}

// TestEveryClassEndToEnd sets up one lease of every node class and checks that the controller
// does exactly what the taxonomy says: delete leaked, adopt unowned, report zombies, leave the
// rest (the upstream garbage collector handles stale-owner and owner-missing).
func TestEveryClassEndToEnd(t *testing.T) {
	reset(t)
	ctx := context.Background()
	fleet := env.NewFleet(t)
	names := map[lease.Class]string{}
	for _, c := range []lease.Class{lease.Healthy, lease.Stale, lease.Unowned, lease.StaleOwner, lease.OwnerMissing, lease.Zombie, lease.Leaked, lease.Other} {
		names[c] = fmt.Sprintf("ip-10-1-0-%d.class-%s.internal", len(names)+1, c)
	}
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: names[lease.Healthy]}); err != nil {
		t.Fatal(err)
	}
	stale, err := fleet.Start(ctx, kubeletsim.Config{Name: names[lease.Stale], LeaseDurationSeconds: 2})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the stale kubelet's lease to be owned", func() (bool, error) {
		l, err := getLease(names[lease.Stale])
		return err == nil && len(l.OwnerReferences) == 1, nil
	})
	stale.Stop()
	createNode(t, names[lease.Unowned])
	createLease(t, names[lease.Unowned], time.Now())
	createNode(t, names[lease.StaleOwner])
	createLease(t, names[lease.StaleOwner], time.Now(), ownerRef(names[lease.StaleOwner], "0a0a0a0a-1111-2222-3333-444444444444"))
	createLease(t, names[lease.OwnerMissing], time.Now().Add(-2*time.Hour), ownerRef(names[lease.OwnerMissing], "0a0a0a0a-1111-2222-3333-555555555555"))
	startZombie(t, fleet, names[lease.Zombie], 4)
	seedLeaked(t, "ip-10-1-9-9.class-leaked", 1, 2*time.Hour)
	names[lease.Leaked] = "ip-10-1-9-9.class-leaked-0.ec2.internal"
	other := createLease(t, names[lease.Other], time.Now().Add(-2*time.Hour))
	other.Spec.HolderIdentity = ptr.To("some-other-controller")
	if _, err := adminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	h := startController(t, Options{GracePeriod: time.Hour, AdoptAfter: time.Second, ZombieReportAfter: time.Second, Workers: 2})

	eventually(t, 30*time.Second, "the leaked lease to be deleted", leaseGone(names[lease.Leaked]))
	eventually(t, 30*time.Second, "the unowned lease to be adopted", func() (bool, error) {
		l, err := getLease(names[lease.Unowned])
		return err == nil && len(l.OwnerReferences) == 1, err
	})
	eventually(t, 30*time.Second, "a zombie event", hasEvent(t, names[lease.Zombie], ReasonZombie))
	eventually(t, 30*time.Second, "a deletion event", hasEvent(t, names[lease.Leaked], ReasonDeleted))
	eventually(t, 30*time.Second, "an adoption event", hasEvent(t, names[lease.Unowned], ReasonAdopted))
	// The upstream garbage collector, not nodekeeper, removes stale-owner and owner-missing leases.
	eventually(t, 60*time.Second, "the garbage collector to remove the owner-missing lease", leaseGone(names[lease.OwnerMissing]))
	eventually(t, 30*time.Second, "the stopped kubelet's lease to be stale", func() (bool, error) {
		return h.metric("nodekeeper_leases", "class", "stale") == 1, nil
	})

	node, err := adminClient().CoreV1().Nodes().Get(ctx, names[lease.Unowned], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adopted, err := getLease(names[lease.Unowned])
	if err != nil {
		t.Fatal(err)
	}
	if got := adopted.OwnerReferences[0]; got.UID != node.UID || got.Kind != "Node" || got.Name != node.Name {
		t.Errorf("adopted lease owner = %+v, want Node %s %s", got, node.Name, node.UID)
	}

	for class, name := range names {
		got := h.outcomes(name)
		var want []deleter.Outcome
		switch class {
		case lease.Leaked:
			want = []deleter.Outcome{deleter.Deleted}
		case lease.Unowned:
			want = []deleter.Outcome{deleter.Adopted}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s lease %s: decisions %v, want %v", class, name, got, want)
		}
	}
	for _, class := range []lease.Class{lease.Healthy, lease.Stale, lease.Zombie, lease.Other} {
		if _, err := getLease(names[class]); err != nil {
			t.Errorf("%s lease: %v", class, err)
		}
	}
	checks := []struct {
		metric string
		labels []string
		want   float64
	}{
		{"nodekeeper_lease_deletions_total", []string{"result", "deleted"}, 1},
		{"nodekeeper_lease_adoptions_total", []string{"result", "adopted"}, 1},
		{"nodekeeper_zombie_kubelets_detected_total", nil, 1},
		{"nodekeeper_leases", []string{"class", "zombie"}, 1},
		{"nodekeeper_leases", []string{"class", "stale"}, 1},
		{"nodekeeper_leases", []string{"class", "other"}, 1},
		{"nodekeeper_leases", []string{"class", "leaked"}, 0},
		{"nodekeeper_leases", []string{"class", "unowned"}, 0},
		{"nodekeeper_cache_synced", nil, 1},
		{"nodekeeper_is_leader", nil, 1},
		{"nodekeeper_zombie_kubelets", nil, 1},
	}
	for _, c := range checks {
		if got := h.metric(c.metric, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.metric, c.labels, got, c.want)
		}
	}
	if got := h.metric("nodekeeper_leases", "class", "healthy"); got < 2 {
		t.Errorf("healthy leases = %v, want at least 2 (the running kubelet and the adopted lease)", got)
	}
	// client-go's request metrics and the work queue's are in the controller's registry. They are
	// per process, and other tests' controllers count too: hence "at least".
	for _, c := range []struct {
		metric string
		labels []string
	}{
		{"rest_client_requests_total", []string{"method", "DELETE", "code", "200"}},
		{"rest_client_requests_total", []string{"method", "PATCH", "code", "200"}},
		{"rest_client_requests_total", []string{"method", "GET", "code", "404"}}, // the live Node check before the delete
		{"workqueue_adds_total", []string{"name", "leases"}},
	} {
		if got := h.metric(c.metric, c.labels...); got < 1 {
			t.Errorf("%s%v = %v, want at least 1", c.metric, c.labels, got)
		}
	}
	if n := assertDeletesWereLeaked(t, h.user, time.Hour); n != 1 {
		t.Errorf("audit shows %d deletes by the controller, want 1", n)
	}
}

// TestRaces stages the races the safety rules exist for, at the worst moment: between the
// classification from the cache and the request.
func TestRaces(t *testing.T) {
	opts := Options{GracePeriod: time.Hour, AdoptAfter: 500 * time.Millisecond, Workers: 1}

	t.Run("lease renewed between classification and delete survives", func(t *testing.T) {
		reset(t)
		name := "ip-10-2-1-1.race-renewed-0.ec2.internal"
		h := startController(t, opts)
		h.beforeActionOnce(name, func() { renewLease(t, name) })
		seedLeaked(t, "ip-10-2-1-1.race-renewed", 1, 2*time.Hour)
		eventually(t, 30*time.Second, "a precondition failure", func() (bool, error) {
			return slices.Contains(h.outcomes(name), deleter.PreconditionFailed), nil
		})
		time.Sleep(2 * time.Second) // the re-classification sees a renewed lease: a zombie
		if _, err := getLease(name); err != nil {
			t.Fatalf("renewed lease was deleted: %v", err)
		}
		if slices.Contains(h.outcomes(name), deleter.Deleted) {
			t.Fatal("controller reports a deletion")
		}
		assertDeletesWereLeaked(t, h.user, time.Hour)
		conflicts := 0
		for _, e := range auditDeletes(readAudit(t), h.user) {
			if e.Name() == name && e.Code() == 409 {
				conflicts++
			}
		}
		if conflicts != 1 {
			t.Errorf("audit: %d DELETEs refused by the precondition, want 1", conflicts)
		}
	})

	t.Run("lease adopted between classification and delete survives", func(t *testing.T) {
		reset(t)
		name := "ip-10-2-2-2.race-adopted.internal"
		h := startController(t, opts)
		h.beforeActionOnce(name, func() {
			// The kubelet came back: its Node registers and it owns its lease.
			n := createNode(t, name)
			p := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":%q,"uid":%q}]}}`, name, n.UID)
			if _, err := adminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Patch(context.Background(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
				t.Error(err)
			}
		})
		createLease(t, name, time.Now().Add(-2*time.Hour))
		eventually(t, 30*time.Second, "the delete to be stopped", func() (bool, error) {
			o := h.outcomes(name)
			return slices.Contains(o, deleter.PreconditionFailed) || slices.Contains(o, deleter.NodeExists), nil
		})
		time.Sleep(2 * time.Second)
		if _, err := getLease(name); err != nil {
			t.Fatalf("adopted lease was deleted: %v", err)
		}
		assertDeletesWereLeaked(t, h.user, time.Hour)
	})

	t.Run("Node registered between classification and delete: the live GET saves the lease, then it is adopted", func(t *testing.T) {
		reset(t)
		name := "ip-10-2-3-3.race-node.internal"
		h := startController(t, opts)
		h.beforeActionOnce(name, func() { createNode(t, name) })
		createLease(t, name, time.Now().Add(-2*time.Hour))
		eventually(t, 30*time.Second, "the lease to be adopted", func() (bool, error) {
			l, err := getLease(name)
			return err == nil && len(l.OwnerReferences) == 1, err
		})
		o := h.outcomes(name)
		if len(o) == 0 || o[0] != deleter.NodeExists {
			t.Errorf("decisions %v, want node-exists first", o)
		}
		if slices.Contains(o, deleter.Deleted) {
			t.Error("lease deleted")
		}
		assertDeletesWereLeaked(t, h.user, time.Hour)
	})

	t.Run("a lease created and renewed before its Node registers is never deleted", func(t *testing.T) {
		reset(t)
		name := "ip-10-2-4-4.race-early.internal"
		// Grace 2s is shorter than the test, so only the renewals keep the lease alive.
		h := startController(t, Options{GracePeriod: 2 * time.Second, AdoptAfter: 500 * time.Millisecond, Workers: 1})
		l := createLease(t, name, time.Now())
		l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		if _, err := adminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					renewLease(t, name)
				}
			}
		})
		time.Sleep(6 * time.Second) // three grace periods without a Node, renewed all along
		createNode(t, name)
		eventually(t, 30*time.Second, "the lease to be adopted", func() (bool, error) {
			l, err := getLease(name)
			return err == nil && len(l.OwnerReferences) == 1, err
		})
		close(stop)
		wg.Wait()
		if slices.Contains(h.outcomes(name), deleter.Deleted) {
			t.Error("lease deleted")
		}
		if n := len(auditDeletes(readAudit(t), h.user)); n != 0 {
			t.Errorf("audit: the controller sent %d DELETEs", n)
		}
	})
}

// TestGracePeriodWithInjectedClock drives the grace period with a fake clock: a lease is requeued
// for exactly the moment it becomes leaked, and a Node that appears within the grace period
// saves its lease.
func TestGracePeriodWithInjectedClock(t *testing.T) {
	reset(t)
	clk := clocktesting.NewFakeClock(time.Now())
	grace := time.Hour
	saved := "ip-10-3-1-1.grace-saved.internal"
	doomed := "ip-10-3-2-2.grace-doomed.internal"
	l := createLease(t, doomed, clk.Now())
	createLease(t, saved, clk.Now())
	user, cfg := controllerUser(t)
	h := startControllerAs(t, user, cfg, Options{GracePeriod: grace, AdoptAfter: time.Second, Workers: 2}, clk)
	eventually(t, 10*time.Second, "both leases classified as zombies", func() (bool, error) {
		return h.metric("nodekeeper_leases", "class", "zombie") == 2, nil
	})
	// From the last activity, which includes the server-stamped creation: a second boundary
	// between the renewTime taken here and the API server's stamp makes the creation later.
	leakAt := lease.Classify(l, nil, clk.Now(), lease.Options{GracePeriod: grace}).LastActivity.Add(grace)

	clk.SetTime(leakAt.Add(-30 * time.Minute)) // half way: a Node registers for one of them
	createNode(t, saved)
	eventually(t, 30*time.Second, "the saved lease to be adopted", func() (bool, error) {
		l, err := getLease(saved)
		return err == nil && len(l.OwnerReferences) == 1, err
	})

	deletedAtLeak(t, clk, doomed, leakAt)
	clk.Step(24 * time.Hour)
	time.Sleep(time.Second)
	if _, err := getLease(saved); err != nil {
		t.Fatalf("the lease saved by its Node was deleted: %v", err)
	}
	if got := h.outcomes(doomed); !slices.Equal(got, []deleter.Outcome{deleter.Deleted}) {
		t.Errorf("doomed lease decisions %v", got)
	}
	if got := h.outcomes(saved); !slices.Equal(got, []deleter.Outcome{deleter.Adopted}) {
		t.Errorf("saved lease decisions %v", got)
	}
}

// deletedAtLeak moves clk to a millisecond before leakAt, checks that lease name survives that
// moment, then moves it to leakAt and waits for the controller to delete the lease.
func deletedAtLeak(t *testing.T, clk *clocktesting.FakeClock, name string, leakAt time.Time) {
	t.Helper()
	clk.SetTime(leakAt.Add(-time.Millisecond))
	time.Sleep(time.Second) // room for a wrong early delete
	if _, err := getLease(name); err != nil {
		t.Fatalf("lease %s deleted before it was leaked at %s: %v", name, leakAt.Format(time.RFC3339Nano), err)
	}
	clk.SetTime(leakAt)
	eventually(t, 10*time.Second, "lease "+name+" to be deleted the moment it is leaked", leaseGone(name))
}

// TestClockSkewedKubeletWaitsForGraceSinceCreation (issue 10, item 8): a pre-1.29 zombie whose
// clock is 65 minutes behind re-creates its lease; the API server stamps the creation now. With a
// one-hour grace period the lease must survive until an hour after its creation, not be deleted
// for its old renewTime (and fought: delete, re-create, delete). A lease that really is that old
// is deleted at once, which shows the controller is acting on this grace period meanwhile.
func TestClockSkewedKubeletWaitsForGraceSinceCreation(t *testing.T) {
	reset(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	grace := time.Hour
	skewed := "ip-10-3-3-3.clock-behind.internal"
	old := "ip-10-3-4-4.really-old.internal"
	renew := clk.Now().Add(-65 * time.Minute)
	l, err := kubeletsim.SeedLeakedLease(ctx, env.AdminClient(), skewed, renew) // created now
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeletsim.SeedOldLeakedLease(ctx, env.AdminClient(), env, old, renew); err != nil {
		t.Fatal(err)
	}
	user, cfg := controllerUser(t)
	h := startControllerAs(t, user, cfg, Options{GracePeriod: grace, Workers: 2}, clk)
	eventually(t, 30*time.Second, "the really old lease to be deleted", leaseGone(old))
	eventually(t, 10*time.Second, "the skewed lease classified as a zombie", func() (bool, error) {
		return h.metric("nodekeeper_leases", "class", "zombie") == 1, nil
	})
	leakAt := l.CreationTimestamp.Add(grace)
	if got := lease.Classify(l, nil, clk.Now(), lease.Options{GracePeriod: grace}).RecheckAt; !got.Equal(leakAt) {
		t.Fatalf("recheck at %s, want creation + grace %s", got, leakAt)
	}

	deletedAtLeak(t, clk, skewed, leakAt)
	// The decision is recorded just after the DELETE returns.
	eventually(t, 10*time.Second, "the delete decision", func() (bool, error) { return len(h.outcomes(skewed)) > 0, nil })
	if got := h.outcomes(skewed); !slices.Equal(got, []deleter.Outcome{deleter.Deleted}) {
		t.Errorf("skewed lease decisions %v, want one delete", got)
	}
}

// TestLegacyZombieNotFought: a pre-1.29 kubelet without its Node keeps re-creating its lease.
// The controller never deletes it while it runs, reports it, and deletes the lease once the
// kubelet has died and the grace period has passed.
func TestLegacyZombieNotFought(t *testing.T) {
	reset(t)
	fleet := env.NewFleet(t)
	name := "ip-10-4-1-1.zombie.internal"
	grace := 5 * time.Second
	k := startZombie(t, fleet, name, 2)
	h := startController(t, Options{GracePeriod: grace, ZombieReportAfter: time.Second, Workers: 2})
	eventually(t, 30*time.Second, "a zombie event", hasEvent(t, name, ReasonZombie))
	time.Sleep(3 * grace) // the kubelet keeps renewing for three grace periods
	if n := len(auditDeletes(readAudit(t), h.user)); n != 0 {
		t.Fatalf("the controller sent %d DELETEs while the zombie kubelet ran", n)
	}
	if got := h.metric("nodekeeper_zombie_kubelets_detected_total"); got != 1 {
		t.Errorf("zombies detected = %v, want 1 (reported once)", got)
	}
	if got := h.metric("nodekeeper_leases", "class", "zombie"); got != 1 {
		t.Errorf("zombie class gauge = %v, want 1", got)
	}
	if got := h.metric("nodekeeper_zombie_kubelets"); got != 1 {
		t.Errorf("zombie kubelets gauge = %v, want 1", got)
	}
	k.Stop()
	stopped := time.Now()
	eventually(t, grace+30*time.Second, "the dead zombie's lease to be deleted", leaseGone(name))
	took := time.Since(stopped)
	t.Logf("lease deleted %s after the kubelet stopped (grace %s)", took.Round(time.Millisecond), grace)
	if took < grace-time.Second {
		t.Errorf("lease deleted %s after the kubelet stopped, before the grace period %s", took, grace)
	}
	if n := assertDeletesWereLeaked(t, h.user, grace); n != 1 {
		t.Errorf("audit: %d deletes, want 1", n)
	}
}

// TestAdoptionThenGarbageCollection: once adopted, a lease goes with its Node through the real
// garbage collector; nodekeeper never deletes it.
func TestAdoptionThenGarbageCollection(t *testing.T) {
	reset(t)
	name := "ip-10-5-1-1.adopt-gc.internal"
	node := createNode(t, name)
	createLease(t, name, time.Now().Add(-10*time.Minute))
	h := startController(t, Options{GracePeriod: time.Hour, AdoptAfter: 500 * time.Millisecond})
	eventually(t, 30*time.Second, "adoption", func() (bool, error) {
		l, err := getLease(name)
		return err == nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == node.UID, err
	})
	nodeDeleted := time.Now() // an earlier -count pass used the same name
	if err := adminClient().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the garbage collector to delete the lease", leaseGone(name))
	events := readAudit(t)
	if n := len(auditDeletes(events, h.user)); n != 0 {
		t.Errorf("the controller sent %d DELETEs; the garbage collector should have done it", n)
	}
	gc := 0
	for _, e := range events {
		if e.Verb == "delete" && e.Resource() == "leases" && e.Name() == name && e.Code() == 200 &&
			e.User.Username == "system:serviceaccount:kube-system:generic-garbage-collector" && !e.Received.Before(nodeDeleted) {
			gc++
		}
	}
	if gc != 1 {
		t.Errorf("audit: %d deletes of the lease by the garbage collector, want 1", gc)
	}
}

// TestDryRun decides everything and writes nothing but events.
func TestDryRun(t *testing.T) {
	reset(t)
	leaked := seedLeaked(t, "ip-10-6-1-1.dry", 3, 2*time.Hour)
	unowned := "ip-10-6-2-2.dry-unowned.internal"
	createNode(t, unowned)
	createLease(t, unowned, time.Now().Add(-time.Minute))
	h := startController(t, Options{GracePeriod: time.Hour, DryRun: true, AdoptAfter: 100 * time.Millisecond})
	eventually(t, 30*time.Second, "dry-run decisions", func() (bool, error) {
		return h.count(deleter.WouldDelete) == 3 && h.count(deleter.WouldAdopt) == 1, nil
	})
	eventually(t, 30*time.Second, "a dry-run event", hasEvent(t, leaked[0], ReasonWouldDelete))
	// A re-sync of the same lease versions must not report them again.
	for _, n := range append(leaked, unowned) {
		h.c.enqueue(n)
	}
	time.Sleep(time.Second)
	if h.count(deleter.WouldDelete) != 3 || h.count(deleter.WouldAdopt) != 1 {
		t.Errorf("dry-run decisions repeated: %d would-delete, %d would-adopt", h.count(deleter.WouldDelete), h.count(deleter.WouldAdopt))
	}
	for _, n := range leaked {
		if _, err := getLease(n); err != nil {
			t.Errorf("dry run deleted %s: %v", n, err)
		}
	}
	if l, _ := getLease(unowned); l == nil || len(l.OwnerReferences) != 0 {
		t.Error("dry run adopted the lease")
	}
	events := readAudit(t)
	for _, verb := range []string{"delete", "patch", "update", "create"} {
		if n := countRequests(events, h.user, verb, "leases", time.Time{}); n != 0 {
			t.Errorf("dry run sent %d lease %s requests", n, verb)
		}
	}
	if got := h.metric("nodekeeper_lease_deletions_total", "result", "dry_run"); got != 3 {
		t.Errorf("dry-run deletions metric = %v, want 3", got)
	}
}

// TestAPIServerRestart: the API server goes away and comes back mid-run; the same controller
// process recovers (caches, leadership) and makes no wrong delete.
func TestAPIServerRestart(t *testing.T) {
	reset(t)
	ctx := context.Background()
	ensureNamespace(t, "nodekeeper-restart")
	fleet := env.NewFleet(t)
	var healthy []string
	for i := range 10 {
		k, err := fleet.Start(ctx, kubeletsim.Config{Name: fmt.Sprintf("ip-10-8-0-%d.restart.internal", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		healthy = append(healthy, k.Name())
	}
	h := startController(t, Options{GracePeriod: time.Hour, Workers: 2, LeaderElection: LeaderElectionOptions{
		Enabled: true, Namespace: "nodekeeper-restart", Name: "nodekeeper-controller", Identity: "restart-test",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	}})
	before := seedLeaked(t, "ip-10-8-1-1.restart-before", 20, 2*time.Hour)
	for _, n := range before {
		eventually(t, 30*time.Second, "leaked leases deleted before the restart", leaseGone(n))
	}
	var leadershipLost atomic.Bool
	stopWatch := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
				if !h.c.Leading() {
					leadershipLost.Store(true)
				}
			}
		}
	}()
	if err := env.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	after := seedLeaked(t, "ip-10-8-2-2.restart-after", 20, 2*time.Hour)
	for _, n := range after {
		eventually(t, 90*time.Second, "leaked leases seeded after the restart deleted", leaseGone(n))
	}
	close(stopWatch)
	select {
	case err := <-h.done:
		t.Fatalf("the controller exited during the restart: %v", err)
	default:
	}
	t.Logf("leadership lost during the restart: %v; leading now: %v", leadershipLost.Load(), h.c.Leading())
	for _, n := range healthy {
		l, err := getLease(n)
		if err != nil || len(l.OwnerReferences) != 1 {
			t.Errorf("healthy lease %s: %v", n, err)
		}
		if o := h.outcomes(n); len(o) != 0 {
			t.Errorf("healthy lease %s: decisions %v", n, o)
		}
	}
	if n := assertDeletesWereLeaked(t, h.user, time.Hour); n != 40 {
		t.Errorf("audit: %d successful deletes, want 40", n)
	}
}

// TestNoPeriodicList: after the initial sync the controller sends no LIST, only watches.
// (The five-minute version of this check is BenchmarkIdleListRequests.)
func TestNoPeriodicList(t *testing.T) {
	reset(t)
	fleet := env.NewFleet(t)
	for i := range 3 {
		if _, err := fleet.Start(context.Background(), kubeletsim.Config{Name: fmt.Sprintf("ip-10-9-0-%d.idle.internal", i+1), LeaseDurationSeconds: 4}); err != nil {
			t.Fatal(err)
		}
	}
	h := startController(t, Options{GracePeriod: time.Hour})
	synced := time.Now()
	time.Sleep(10 * time.Second)
	// Watches are audited when they start (stage ResponseStarted): the informers' initial list is
	// a streaming list, a WATCH with sendInitialEvents, which completes only when it ends.
	events := readAuditStarted(t)
	// The filter must match this controller at all, or the count below proves nothing: the
	// first request of h.user for each resource is its initial list, before the sync.
	for _, res := range []string{"leases", "nodes"} {
		first := firstRequest(events, h.user, res)
		switch {
		case first == nil:
			t.Fatalf("the audit log has no %s request by %s: the filter matches nothing", res, h.user)
		case !isList(*first) || !first.Received.Before(synced):
			t.Fatalf("the first %s request by %s is %s %s at %s, want the initial list before the sync at %s",
				res, h.user, first.Verb, first.RequestURI, first.Received.Format(time.RFC3339Nano), synced.Format(time.RFC3339Nano))
		}
	}
	lists := 0
	for _, e := range events {
		if e.User.Username == h.user && isList(e) && !e.Received.Before(synced) && (e.Resource() == "leases" || e.Resource() == "nodes") {
			lists++
		}
	}
	if lists != 0 {
		t.Errorf("%d LIST requests after the initial sync", lists)
	}
}

// TestEndpoints: readiness follows the cache sync, liveness the leader lease, and /metrics serves
// the controller's own registry in the Prometheus text format.
func TestEndpoints(t *testing.T) {
	reset(t)
	ensureNamespace(t, "nodekeeper-probes")
	le := LeaderElectionOptions{Enabled: true, Namespace: "nodekeeper-probes", Name: "nodekeeper-controller",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	_, cfg := controllerUser(t)
	idle, err := NewForConfig(cfg, Options{LeaderElection: le})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(idle.ProbeHandler(), "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches synced: %d, want 503", code)
	}

	h := startController(t, Options{GracePeriod: time.Hour, LeaderElection: le})
	for _, path := range []string{"/readyz", "/healthz"} {
		if code, body := get(h.c.ProbeHandler(), path); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := get(h.c.MetricsHandler(), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		"nodekeeper_is_leader 1", `nodekeeper_leases{class="leaked"} 0`, "nodekeeper_zombie_kubelets 0",
		`nodekeeper_lease_deletions_total{result="error"} 0`, "nodekeeper_decision_duration_seconds_bucket",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
