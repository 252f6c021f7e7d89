package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// GrantClusterRole lets user do what rules say, cluster-wide: a ClusterRole and a
// ClusterRoleBinding, both named nodekeeper-test-<user>, removed when the test ends so that a
// second pass (-count=2) on the same control plane starts clean. It returns once the authorizer
// allows every verb of every rule: RBAC objects reach it through an informer a moment after
// their creation, and a test that ran before would see a Forbidden that is not the one it is
// about. Tests of missing permissions grant the rest and assert on what is left out.
func (e *Env) GrantClusterRole(t testing.TB, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	admin := e.AdminClient()
	name := "nodekeeper-test-" + user
	create := metav1.CreateOptions{FieldManager: "nodekeeper-test"}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, create); err != nil {
		t.Fatalf("create ClusterRole %s: %v", name, err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, create); err != nil {
		t.Fatalf("create ClusterRoleBinding %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	for _, ra := range accessesOf(rules) {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: ra.res, NonResourceAttributes: ra.nonRes},
			}, metav1.CreateOptions{})
			if err != nil {
				last = err
				return false, nil // a throttled or failed review is asked again
			}
			last = fmt.Errorf("not allowed: %s", r.Status.Reason)
			return r.Status.Allowed, nil
		})
		if err != nil {
			t.Fatalf("%s was granted %s but the authorizer does not agree: %v", user, ra, last)
		}
	}
}

// ServiceAccount is ServiceAccountConfig for a test: the client configuration of ServiceAccount
// namespace/name (created when missing) with a bound token, failing the test on error.
func (e *Env) ServiceAccount(t testing.TB, namespace, name string) *rest.Config {
	t.Helper()
	cfg, err := e.ServiceAccountConfig(context.Background(), namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// BoundServiceAccount is ServiceAccount bound to the existing ClusterRole role by a
// ClusterRoleBinding named binding (one that exists is kept), deleted when the test ends. Unlike
// GrantClusterRole it does not wait for the authorizer: the tests of a shipped role poll for
// what it allows.
func (e *Env) BoundServiceAccount(t testing.TB, namespace, name, role, binding string) *rest.Config {
	t.Helper()
	cfg := e.ServiceAccount(t, namespace, name)
	admin := e.AdminClient()
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ClusterRoleBinding %s: %v", binding, err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
	})
	return cfg
}

// access is one verb on one resource or non-resource URL.
type access struct {
	res    *authorizationv1.ResourceAttributes
	nonRes *authorizationv1.NonResourceAttributes
}

func (a access) String() string {
	if a.nonRes != nil {
		return a.nonRes.Verb + " " + a.nonRes.Path
	}
	res := a.res.Resource
	if a.res.Subresource != "" {
		res += "/" + a.res.Subresource
	}
	if a.res.Group != "" {
		res += "." + a.res.Group
	}
	return a.res.Verb + " " + res
}

// accessesOf lists every verb of every rule on each of its resources (the first API group, a
// named resource's name) and non-resource URLs.
func accessesOf(rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, path := range r.NonResourceURLs {
				out = append(out, access{nonRes: &authorizationv1.NonResourceAttributes{Verb: verb, Path: path}})
			}
			group := ""
			if len(r.APIGroups) > 0 {
				group = r.APIGroups[0]
			}
			name := ""
			if len(r.ResourceNames) > 0 {
				name = r.ResourceNames[0]
			}
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				out = append(out, access{res: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name}})
			}
		}
	}
	return out
}
