package clustertest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// TestLeasesAllNamespacesEscapesHostileHolder: a tenant allowed only to write Leases in its own
// namespace puts terminal escapes into a leader lock's holderIdentity; an admin running
// `nodekeeper leases -A` (table and wide) sees them as visible text, never raw. (Invalid UTF-8 cannot
// travel through the API's JSON; the unit tests of the printers cover it.)
func TestLeasesAllNamespacesEscapesHostileHolder(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	const ns, tenant = "tenant-hostile", "tenant-hostile-user"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "leases"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "leases"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "leases"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: tenant}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tc, err := kubernetes.NewForConfig(env.UserConfig(tenant))
	if err != nil {
		t.Fatal(err)
	}
	hostile := map[string]struct{ raw, shown string }{
		"osc-title":    {"app\x1b]0;pwned\x07", `app\x1b]0;pwned\x07`},
		"clear-screen": {"\x1b[2J\x1b[Hfake", `\x1b[2J\x1b[Hfake`},
		"c1-csi":       {"a\u009b2Jb", `a\u009b2Jb`},
		"bidi":         {"abc\u202edcba", `abc\u202edcba`},
	}
	now := metav1.NewMicroTime(time.Now())
	for name, h := range hostile {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(h.raw), LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](1)}}
		err := retryOnRBACPropagation(ctx, func() error {
			_, err := tc.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("the tenant cannot create its lease: %v", err)
		}
	}

	bin := filepath.Join(pluginPath(t), "kubectl-nodekeeper")
	for _, args := range [][]string{{"leases", "-A"}, {"leases", "-A", "-o", "wide"}} {
		cmd := exec.Command(bin, append(args, "--kubeconfig", env.KubeconfigPath())...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for i, line := range strings.Split(string(out), "\n") {
			if !textsafe.Safe(line) {
				t.Fatalf("%v: line %d reaches the terminal raw: %q", args, i+1, line)
			}
		}
		for name, h := range hostile {
			var row string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, ns+" ") && strings.Contains(line, " "+name+" ") {
					row = line
				}
			}
			if !strings.Contains(row, " leader ") || !strings.Contains(row, h.shown) {
				t.Errorf("%v: lease %s: row %q lacks the class leader and the escaped holder %q", args, name, row, h.shown)
			}
		}
	}
}

// retryOnRBACPropagation retries f while a fresh RoleBinding is not yet in the authorizer's cache.
func retryOnRBACPropagation(ctx context.Context, f func() error) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = f(); err == nil || !strings.Contains(err.Error(), "forbidden") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}
