package deleter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// The deleter's tests need etcd and kube-apiserver only: without kube-controller-manager no
// garbage collector races the deleter for a lease whose Node is gone.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// uniqueName returns a node-like name unique within this test binary.
func uniqueName() string { return testenv.UniqueNodeName(9, "ec2.internal") }

// createLease writes a kubelet-shaped lease last renewed `idle` ago (testenv.CreateNodeLease).
func createLease(t *testing.T, _ kubernetes.Interface, name string, idle time.Duration, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	t.Helper()
	return env.CreateNodeLease(t, name, time.Now().Add(-idle), owners...)
}

// createNode creates a Node (testenv.CreateNode) and deletes it when the test ends.
func createNode(t *testing.T, c kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n := env.CreateNode(t, name)
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return n
}

func newDeleter(t *testing.T, cfg *rest.Config, dryRun bool) *Deleter {
	t.Helper()
	c, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(c.Kube.CoordinationV1(), c.Metadata, Options{Classify: lease.Options{GracePeriod: time.Hour}, DryRun: dryRun})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requireLease fails the test at once if the lease name is gone.
func requireLease(t *testing.T, name string) {
	t.Helper()
	if !env.NodeLeaseExists(t, name) {
		t.Fatalf("lease %s deleted", name)
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	d := newDeleter(t, env.AdminConfig(), false)
	dry := newDeleter(t, env.AdminConfig(), true)
	leases := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace)
	// leakedThen is a leaked lease as the caller classified it, which change then alters on the
	// server before the Deleter acts.
	leakedThen := func(change func(t *testing.T, l *coordinationv1.Lease) error) func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
		return func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
			l := createLease(t, admin, name, 2*time.Hour)
			if err := change(t, l); err != nil {
				t.Fatal(err)
			}
			return l, nil
		}
	}

	tests := []struct {
		name        string
		setup       func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef)
		dryRun      bool
		want        Outcome
		wantSurvive bool
		wantReqs    int
	}{
		{
			name: "leaked lease is deleted",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				return createLease(t, admin, name, 2*time.Hour), nil
			},
			want: Deleted, wantReqs: 2,
		},
		{
			name: "dry run sends no DELETE",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				return createLease(t, admin, name, 2*time.Hour), nil
			},
			dryRun: true, want: WouldDelete, wantSurvive: true, wantReqs: 1,
		},
		{
			name: "zombie (renewed recently) is not deleted and costs no request",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				return createLease(t, admin, name, 5*time.Second), nil
			},
			want: NotLeaked, wantSurvive: true,
		},
		{
			name: "lease of an existing Node per the caller is not deleted",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				n := createNode(t, admin, name)
				return createLease(t, admin, name, 2*time.Hour), &lease.NodeRef{Name: name, UID: n.UID}
			},
			want: NotLeaked, wantSurvive: true,
		},
		{
			name: "stale cache: the Node registered after the caller looked; the live GET saves the lease",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				l := createLease(t, admin, name, 2*time.Hour)
				createNode(t, admin, name)
				return l, nil
			},
			want: NodeExists, wantSurvive: true, wantReqs: 1,
		},
		{
			name: "lease renewed between classification and delete: precondition saves it",
			setup: leakedThen(func(t *testing.T, l *coordinationv1.Lease) error {
				fresh := l.DeepCopy()
				fresh.Spec.RenewTime = ptr.To(metav1.NowMicro())
				_, err := leases.Update(ctx, fresh, metav1.UpdateOptions{})
				return err
			}),
			want: PreconditionFailed, wantSurvive: true, wantReqs: 2,
		},
		{
			name: "lease adopted between classification and delete: precondition saves it",
			setup: leakedThen(func(t *testing.T, l *coordinationv1.Lease) error {
				patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":%q,"uid":"0a0a0a0a-0000-0000-0000-000000000001"}]}}`, l.Name)
				_, err := leases.Patch(ctx, l.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
				return err
			}),
			want: PreconditionFailed, wantSurvive: true, wantReqs: 2,
		},
		{
			name: "lease deleted and re-created under the same name: the UID precondition saves the new one",
			setup: leakedThen(func(t *testing.T, l *coordinationv1.Lease) error {
				if err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
				createLease(t, admin, l.Name, 2*time.Hour)
				return nil
			}),
			want: PreconditionFailed, wantSurvive: true, wantReqs: 2,
		},
		{
			name: "lease already gone",
			setup: leakedThen(func(t *testing.T, l *coordinationv1.Lease) error {
				return leases.Delete(ctx, l.Name, metav1.DeleteOptions{})
			}),
			want: Gone, wantReqs: 2,
		},
		{
			name: "owned lease whose Node is gone is left to the upstream garbage collector",
			setup: func(t *testing.T, name string) (*coordinationv1.Lease, *lease.NodeRef) {
				return createLease(t, admin, name, 2*time.Hour, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: "0a0a0a0a-0000-0000-0000-000000000002"}), nil
			},
			want: NotLeaked, wantSurvive: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniqueName()
			l, node := tt.setup(t, name)
			dd := d
			if tt.dryRun {
				dd = dry
			}
			r := dd.Delete(ctx, l, node)
			if r.Outcome != tt.want {
				t.Fatalf("outcome = %s (%s, err %v), want %s", r.Outcome, r.Reason, r.Err, tt.want)
			}
			if r.Requests != tt.wantReqs {
				t.Errorf("requests = %d, want %d", r.Requests, tt.wantReqs)
			}
			if r.Reason == "" {
				t.Error("empty reason")
			}
			if got := env.NodeLeaseExists(t, name); got != tt.wantSurvive {
				t.Errorf("lease exists = %v, want %v", got, tt.wantSurvive)
			}
		})
	}
}

func TestDeleteRefusesWithoutPreconditions(t *testing.T) {
	d := newDeleter(t, env.AdminConfig(), false)
	name := uniqueName()
	l := createLease(t, env.AdminClient(), name, 2*time.Hour)
	l.ResourceVersion = ""
	r := d.Delete(context.Background(), l, nil)
	if r.Outcome != Failed || r.Err == nil || r.Requests != 0 {
		t.Fatalf("got %s %v after %d requests, want a refusal", r.Outcome, r.Err, r.Requests)
	}
	requireLease(t, name)
}

// TestDeleteForbidden: an identity without the delete verb gets a Failed outcome naming the step.
func TestDeleteForbidden(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	user := "reader-" + uniqueName()
	env.GrantClusterRole(t, user,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}})
	d := newDeleter(t, env.UserConfig(user), false)
	name := uniqueName()
	l := createLease(t, admin, name, 2*time.Hour)
	r := d.Delete(ctx, l, nil)
	if r.Outcome != Failed || r.Step != "delete lease" || !apierrors.IsForbidden(r.Err) {
		t.Fatalf("got %s step %q err %v, want a forbidden delete", r.Outcome, r.Step, r.Err)
	}
	requireLease(t, name)
}

func TestAdopt(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	d := newDeleter(t, env.AdminConfig(), false)

	t.Run("unowned lease gets the live Node UID", func(t *testing.T) {
		name := uniqueName()
		n := createNode(t, admin, name)
		l := createLease(t, admin, name, 5*time.Second)
		// The caller's cached UID is stale (a re-created Node); the live one must win.
		r := d.Adopt(ctx, l, &lease.NodeRef{Name: name, UID: "stale-uid"})
		if r.Outcome != Adopted {
			t.Fatalf("outcome %s: %s %v", r.Outcome, r.Reason, r.Err)
		}
		got, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != n.UID || got.OwnerReferences[0].Kind != "Node" {
			t.Fatalf("ownerReferences = %+v, want the Node %s", got.OwnerReferences, n.UID)
		}
		managers := ""
		for _, mf := range got.ManagedFields {
			managers += mf.Manager + " "
		}
		if !strings.Contains(managers, kube.FieldManager) {
			t.Errorf("managedFields managers %q lack %q", managers, kube.FieldManager)
		}
		if c := lease.Classify(got, &lease.NodeRef{Name: name, UID: n.UID}, time.Now(), lease.Options{}).Class; c != lease.Healthy {
			t.Errorf("after adoption the lease is %s, want healthy", c)
		}
	})
	t.Run("lease renewed in between: conflict, not overwritten", func(t *testing.T) {
		name := uniqueName()
		n := createNode(t, admin, name)
		l := createLease(t, admin, name, 5*time.Second)
		fresh := l.DeepCopy()
		fresh.Spec.RenewTime = ptr.To(metav1.NowMicro())
		if _, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if r := d.Adopt(ctx, l, &lease.NodeRef{Name: name, UID: n.UID}); r.Outcome != PreconditionFailed {
			t.Fatalf("outcome %s: %s %v", r.Outcome, r.Reason, r.Err)
		}
	})
	t.Run("Node gone by the live GET", func(t *testing.T) {
		name := uniqueName()
		l := createLease(t, admin, name, 5*time.Second)
		if r := d.Adopt(ctx, l, &lease.NodeRef{Name: name, UID: "cached"}); r.Outcome != NodeMissing {
			t.Fatalf("outcome %s: %s %v", r.Outcome, r.Reason, r.Err)
		}
	})
	t.Run("dry run", func(t *testing.T) {
		name := uniqueName()
		n := createNode(t, admin, name)
		l := createLease(t, admin, name, 5*time.Second)
		if r := newDeleter(t, env.AdminConfig(), true).Adopt(ctx, l, &lease.NodeRef{Name: name, UID: n.UID}); r.Outcome != WouldAdopt {
			t.Fatalf("outcome %s: %s %v", r.Outcome, r.Reason, r.Err)
		}
		got, _ := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if len(got.OwnerReferences) != 0 {
			t.Fatal("dry run adopted")
		}
	})
	t.Run("not unowned", func(t *testing.T) {
		name := uniqueName()
		l := createLease(t, admin, name, 2*time.Hour)
		if r := d.Adopt(ctx, l, nil); r.Outcome != NotUnowned || r.Requests != 0 {
			t.Fatalf("outcome %s after %d requests", r.Outcome, r.Requests)
		}
	})
}

func TestAdoptPatch(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "lu", ResourceVersion: "7"}}
	p, err := AdoptPatch(l, "n1", "nu")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(p, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"uid":"lu","resourceVersion":"7","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"nu"}]}}`
	if string(p) != want {
		t.Errorf("patch = %s\nwant    %s", p, want)
	}
	if _, err := AdoptPatch(l, "other", "nu"); err == nil {
		t.Error("adopting into another Node's name succeeded")
	}
	if _, err := AdoptPatch(l, "n1", ""); err == nil {
		t.Error("adopting with an empty UID succeeded")
	}
	l.OwnerReferences = []metav1.OwnerReference{{Kind: "X"}}
	if _, err := AdoptPatch(l, "n1", "nu"); err == nil {
		t.Error("adopting an owned lease succeeded")
	}
}

func TestBatchNodeChecker(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	md, err := metadata.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	var present []string
	for range 5 {
		n := uniqueName()
		createNode(t, admin, n)
		present = append(present, n)
	}

	t.Run("concurrent checks share LIST rounds and answer right", func(t *testing.T) {
		b := NewBatchNodeChecker(md)
		const checks = 200
		var wg sync.WaitGroup
		errs := make(chan error, checks)
		for i := range checks {
			wg.Go(func() {
				name, want := fmt.Sprintf("absent-%d", i), false
				if i%40 == 0 {
					name, want = present[i/40], true
				}
				got, n, err := b.NodeExists(ctx, name)
				if err != nil || got != want || n != 0 {
					errs <- fmt.Errorf("%s: exists=%v n=%d err=%v, want %v", name, got, n, err, want)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if b.Requests() >= checks/2 || b.Lists() == 0 {
			t.Errorf("%d requests (%d LIST rounds) for %d concurrent checks; want far fewer than one per check", b.Requests(), b.Lists(), checks)
		}
	})

	t.Run("a Node created before a check is always seen, even with a round in flight", func(t *testing.T) {
		b := NewBatchNodeChecker(md)
		stop := make(chan struct{})
		var bg sync.WaitGroup
		// Keep rounds running back to back, so checks often register mid-round.
		for range 8 {
			bg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						_, _, _ = b.NodeExists(ctx, "background-absent")
					}
				}
			})
		}
		for range 30 {
			name := uniqueName()
			createNode(t, admin, name)
			if got, _, err := b.NodeExists(ctx, name); err != nil || !got {
				t.Errorf("node %s created before the check: exists=%v err=%v", name, got, err)
			}
		}
		close(stop)
		bg.Wait()
	})

	t.Run("many Nodes and few checks: GETs instead of a LIST", func(t *testing.T) {
		b := NewBatchNodeChecker(md)
		b.lastSize = 10 * listWorthIt // as if a LIST had found many Nodes
		got, _, err := b.NodeExists(ctx, present[0])
		if err != nil || !got {
			t.Fatalf("exists=%v err=%v", got, err)
		}
		if b.Lists() != 0 || b.Requests() != 1 {
			t.Errorf("%d lists, %d requests; want one GET", b.Lists(), b.Requests())
		}
	})

	t.Run("cancelled check", func(t *testing.T) {
		b := NewBatchNodeChecker(md)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := b.NodeExists(cctx, "x"); err == nil {
			t.Error("no error from a cancelled check")
		}
	})

	t.Run("deleter with the batch checker keeps a lease whose Node the cache missed", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(kube.Protobuf(env.AdminConfig()))
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(cs.CoordinationV1(), md, Options{Classify: lease.Options{GracePeriod: time.Hour}, NodeChecker: NewBatchNodeChecker(md)})
		if err != nil {
			t.Fatal(err)
		}
		name := uniqueName()
		l := createLease(t, admin, name, 2*time.Hour)
		createNode(t, admin, name)
		if r := d.Delete(ctx, l, nil); r.Outcome != NodeExists {
			t.Fatalf("outcome %s: %s", r.Outcome, r.Reason)
		}
		other := uniqueName()
		l2 := createLease(t, admin, other, 2*time.Hour)
		if r := d.Delete(ctx, l2, nil); r.Outcome != Deleted || r.Requests != 1 {
			t.Fatalf("outcome %s with %d requests: %s", r.Outcome, r.Requests, r.Reason)
		}
	})
}
