package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// rbacFile is the RBAC that deploy/ ships; the controller must run with exactly that.
const rbacFile = "../../deploy/kustomize/base/rbac.yaml"

// shippedRBAC holds the RBAC objects of rbacFile.
type shippedRBAC struct {
	sa           corev1.ServiceAccount
	roles        []rbacv1.Role
	clusterRoles []rbacv1.ClusterRole
	bindings     []rbacv1.RoleBinding
	crBindings   []rbacv1.ClusterRoleBinding
}

// yamlDocs returns the YAML documents of file (a path with slashes, from this package).
func yamlDocs(t *testing.T, file string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, doc)
	}
}

func loadRBAC(t *testing.T) shippedRBAC {
	t.Helper()
	var out shippedRBAC
	for _, doc := range yamlDocs(t, rbacFile) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		var target any
		switch tm.Kind {
		case "":
			continue
		case "ServiceAccount":
			target = &out.sa
		case "Role":
			target = appendZero(&out.roles)
		case "ClusterRole":
			target = appendZero(&out.clusterRoles)
		case "RoleBinding":
			target = appendZero(&out.bindings)
		case "ClusterRoleBinding":
			target = appendZero(&out.crBindings)
		default:
			t.Fatalf("%s: unexpected kind %q", rbacFile, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s: %s: %v", rbacFile, tm.Kind, err)
		}
	}
	if out.sa.Name == "" || len(out.roles)+len(out.clusterRoles) == 0 {
		t.Fatalf("%s has no ServiceAccount or no roles", rbacFile)
	}
	return out
}

// appendZero appends a zero T to *s and returns it, for the document to be decoded into.
func appendZero[T any](s *[]T) *T {
	*s = append(*s, *new(T))
	return &(*s)[len(*s)-1]
}

// apply creates or replaces every object.
func (s shippedRBAC) apply(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := adminClient()
	if _, err := c.CoreV1().Namespaces().Create(ctx, nsObject(s.sa.Namespace), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sa := s.sa.DeepCopy()
	if _, err := c.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, r := range s.roles {
		r := r.DeepCopy()
		_, err := c.RbacV1().Roles(r.Namespace).Update(ctx, r, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = c.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
		}
		must(err)
	}
	for _, r := range s.clusterRoles {
		r := r.DeepCopy()
		_, err := c.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = c.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
		}
		must(err)
	}
	for _, b := range s.bindings {
		b := b.DeepCopy()
		if _, err := c.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, b := range s.crBindings {
		b := b.DeepCopy()
		if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// grant is one verb of one rule of one role, as shipped.
type grant struct {
	role      string // "Role ns/name" or "ClusterRole name"
	rule      int
	verb      string
	group     string
	resource  string
	namespace string // of a Role
	name      string // resourceNames[0], if any
}

func (s shippedRBAC) grants() []grant {
	var out []grant
	add := func(role, ns string, rules []rbacv1.PolicyRule) {
		for i, r := range rules {
			for _, v := range r.Verbs {
				g := grant{role: role, rule: i, verb: v, group: r.APIGroups[0], resource: r.Resources[0], namespace: ns}
				if len(r.ResourceNames) > 0 {
					g.name = r.ResourceNames[0]
				}
				out = append(out, g)
			}
		}
	}
	for _, r := range s.roles {
		add("Role "+r.Namespace+"/"+r.Name, r.Namespace, r.Rules)
	}
	for _, r := range s.clusterRoles {
		add("ClusterRole "+r.Name, "", r.Rules)
	}
	return out
}

// without returns a copy of s with g's verb removed from its rule.
func (s shippedRBAC) without(g grant) shippedRBAC {
	out := s
	out.roles = nil
	out.clusterRoles = nil
	drop := func(role string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var res []rbacv1.PolicyRule
		for i, r := range rules {
			r = *r.DeepCopy()
			if role == g.role && i == g.rule {
				r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == g.verb })
				if len(r.Verbs) == 0 {
					continue
				}
			}
			res = append(res, r)
		}
		return res
	}
	for _, r := range s.roles {
		r := *r.DeepCopy()
		r.Rules = drop("Role "+r.Namespace+"/"+r.Name, r.Rules)
		out.roles = append(out.roles, r)
	}
	for _, r := range s.clusterRoles {
		r := *r.DeepCopy()
		r.Rules = drop("ClusterRole "+r.Name, r.Rules)
		out.clusterRoles = append(out.clusterRoles, r)
	}
	return out
}

// waitAllowed waits until the identity's access to g is as wanted (RBAC caches converge).
func waitAllowed(t *testing.T, client kubernetes.Interface, g grant, ns string, want bool) {
	t.Helper()
	if g.namespace != "" {
		ns = g.namespace
	}
	eventually(t, 30*time.Second, fmt.Sprintf("RBAC for %s %s to be allowed=%v", g.verb, g.resource, want), func() (bool, error) {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: g.verb, Group: g.group, Resource: g.resource, Namespace: ns, Name: g.name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed == want, nil
	})
}

// TestShippedRBAC runs the controller as a ServiceAccount bound to exactly the RBAC in deploy/:
// with all of it the controller works (deletes, adopts, records events, leads); with any one verb
// of any rule removed it refuses to start and names the missing verb and resource.
func TestShippedRBAC(t *testing.T) {
	reset(t)
	ctx := context.Background()
	rbac := loadRBAC(t)
	rbac.apply(t)
	ns := rbac.sa.Namespace
	cfg := env.ServiceAccount(t, ns, rbac.sa.Name)
	saClient := kubernetes.NewForConfigOrDie(cfg)
	user := "system:serviceaccount:" + ns + ":" + rbac.sa.Name
	le := LeaderElectionOptions{Enabled: true, Namespace: ns, Name: DefaultElectionID,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}

	t.Run("the shipped RBAC is enough", func(t *testing.T) {
		// The service account is the same in every -count pass; its earlier deletes are not this run's.
		prior := assertDeletesWereLeaked(t, user, time.Hour)
		leaked := seedLeaked(t, "ip-10-7-1-1.rbac", 2, 2*time.Hour)
		unowned := "ip-10-7-2-2.rbac-unowned.internal"
		createNode(t, unowned)
		createLease(t, unowned, time.Now().Add(-time.Minute))
		h := startControllerAs(t, user, cfg, Options{GracePeriod: time.Hour, AdoptAfter: 100 * time.Millisecond, LeaderElection: le}, nil)
		for _, n := range leaked {
			eventually(t, 30*time.Second, "leaked lease deleted", leaseGone(n))
		}
		eventually(t, 30*time.Second, "adoption", func() (bool, error) {
			l, err := getLease(unowned)
			return err == nil && len(l.OwnerReferences) == 1, err
		})
		eventually(t, 30*time.Second, "a deletion event", hasEvent(t, leaked[0], ReasonDeleted))
		eventually(t, 30*time.Second, "a leader election event", func() (bool, error) {
			evs, err := adminClient().CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == DefaultElectionID && e.Reason == "LeaderElection" {
					return true, nil
				}
			}
			return false, nil
		})
		if err := h.stop(); err != nil {
			t.Fatalf("controller: %v", err)
		}
		if got := h.metric("nodekeeper_errors_total", "reason", "Forbidden"); got != 0 {
			t.Errorf("%v forbidden errors with the shipped RBAC", got)
		}
		if h.count(deleter.Failed) != 0 {
			t.Errorf("%d failed actions", h.count(deleter.Failed))
		}
		if n := assertDeletesWereLeaked(t, user, time.Hour) - prior; n != 2 {
			t.Errorf("audit: %d deletes, want 2", n)
		}
	})

	for _, g := range rbac.grants() {
		res := g.resource
		if g.group != "" {
			res += "." + g.group
		}
		t.Run(fmt.Sprintf("without %s %s from %s", g.verb, res, g.role), func(t *testing.T) {
			rbac.without(g).apply(t)
			t.Cleanup(func() { rbac.apply(t) })
			waitAllowed(t, saClient, g, lease.NodeLeaseNamespace, false)
			c, err := NewForConfig(cfg, Options{GracePeriod: time.Hour, LeaderElection: le})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err = c.Run(runCtx)
			var missing *MissingPermissionsError
			if !errors.As(err, &missing) {
				t.Fatalf("controller ran without %s %s: Run returned %v", g.verb, g.resource, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "cannot "+g.verb+" "+g.resource) || !strings.Contains(msg, fmt.Sprintf("verb %q", g.verb)) {
				t.Errorf("message does not name verb %q and resource %q: %s", g.verb, g.resource, msg)
			}
			t.Logf("%s", msg)
		})
	}
	rbac.apply(t)
}

// TestShippedRBACIsExactlyRequired: the grants deploy/ ships and the permissions the preflight
// check demands (RequiredPermissions, which names what the code uses) are the same set, verb for
// verb and namespace for namespace: nothing the code needs is missing, nothing is granted beyond
// it, and nothing namespaced is granted cluster-wide (events in particular: the controller writes
// them only in kube-node-lease and in its own namespace).
func TestShippedRBACIsExactlyRequired(t *testing.T) {
	rbac := loadRBAC(t)
	type perm struct{ verb, group, resource, namespace, name string }
	shipped := map[perm]string{}
	for _, g := range rbac.grants() {
		shipped[perm{g.verb, g.group, g.resource, g.namespace, g.name}] = g.role
	}
	le := LeaderElectionOptions{Enabled: true, Namespace: rbac.sa.Namespace, Name: DefaultElectionID}
	required := map[perm]bool{}
	for _, p := range RequiredPermissions(le) {
		required[perm{p.Verb, p.Group, p.Resource, p.Namespace, p.Name}] = true
	}
	for p, role := range shipped {
		if !required[p] {
			t.Errorf("%s grants %+v, which the controller does not use", role, p)
		}
	}
	for p := range required {
		if _, ok := shipped[p]; !ok {
			t.Errorf("the controller needs %+v; deploy/ does not grant it", p)
		}
	}
	for p, role := range shipped {
		if p.resource == "events" && p.namespace == "" {
			t.Errorf("%s grants %s on events cluster-wide", role, p.verb)
		}
	}
}
