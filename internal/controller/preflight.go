package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Permission is one RBAC permission the controller needs.
type Permission struct {
	Verb, Group, Resource, Namespace, Name string
	// WriteOnly permissions are not needed in dry-run mode.
	WriteOnly bool
}

func (p Permission) String() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	s := fmt.Sprintf("%s %s", p.Verb, res)
	if p.Name != "" {
		s += " named " + p.Name
	}
	if p.Namespace != "" {
		s += fmt.Sprintf(" in namespace %s", p.Namespace)
	} else {
		s += " (cluster-wide)"
	}
	return s
}

// RequiredPermissions lists what the controller uses, in the order it uses them. It is the
// contract with deploy/ (the RBAC there grants exactly this).
func RequiredPermissions(le LeaderElectionOptions) []Permission {
	ns := lease.NodeLeaseNamespace
	coord := "coordination.k8s.io"
	perms := []Permission{
		{Verb: "list", Group: coord, Resource: "leases", Namespace: ns},
		{Verb: "watch", Group: coord, Resource: "leases", Namespace: ns},
		{Verb: "get", Group: coord, Resource: "leases", Namespace: ns},
		{Verb: "delete", Group: coord, Resource: "leases", Namespace: ns, WriteOnly: true},
		{Verb: "patch", Group: coord, Resource: "leases", Namespace: ns, WriteOnly: true},
		{Verb: "list", Resource: "nodes"},
		{Verb: "watch", Resource: "nodes"},
		{Verb: "get", Resource: "nodes"},
		// Events about a lease (events.k8s.io, which patches a repeated event into a series) go
		// to the lease's namespace; leader election's core Events to the election namespace.
		{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: ns},
		{Verb: "patch", Group: "events.k8s.io", Resource: "events", Namespace: ns},
	}
	if le.Enabled {
		perms = append(perms,
			Permission{Verb: "get", Group: coord, Resource: "leases", Namespace: le.Namespace, Name: le.Name},
			Permission{Verb: "create", Group: coord, Resource: "leases", Namespace: le.Namespace},
			Permission{Verb: "update", Group: coord, Resource: "leases", Namespace: le.Namespace, Name: le.Name},
			Permission{Verb: "create", Resource: "events", Namespace: le.Namespace},
			Permission{Verb: "patch", Resource: "events", Namespace: le.Namespace},
		)
	}
	return perms
}

// MissingPermissionsError names every permission the controller's identity lacks.
type MissingPermissionsError struct {
	Missing []Permission
}

func (e *MissingPermissionsError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		parts[i] = fmt.Sprintf("cannot %s (RBAC: verb %q on resource %q in API group %q)", p, p.Verb, p.Resource, p.Group)
	}
	return "missing permissions: " + strings.Join(parts, "; ") + "; apply the RBAC in deploy/ (kustomize base or Helm chart)"
}

// preflight asks the API server (SelfSubjectAccessReview) whether this identity holds every
// permission the controller needs, so that a missing one fails at start-up with a message naming
// the verb and resource, not as a silent cache that never syncs. Transient errors (API server not
// up yet) are retried until ctx ends.
func (c *Controller) preflight(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	client := c.deps.Client // SelfSubjectAccessReview is allowed to everyone
	var missing []Permission
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		perms := RequiredPermissions(c.opts.LeaderElection)
		if c.opts.SecureMetrics {
			perms = append(perms, MetricsAuthPermissions()...)
		}
		m, err := checkPermissions(ctx, client, perms)
		if err != nil {
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				return false, fmt.Errorf("cannot check permissions: %w", err)
			}
			if lastErr == nil || lastErr.Error() != err.Error() {
				logger.Info("Permission check failed; retrying", "err", err)
			}
			lastErr = err
			return false, nil
		}
		missing = m
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil && lastErr != nil {
			return fmt.Errorf("permission check: %w (last error: %v)", err, lastErr)
		}
		return err
	}
	var fatal, warn []Permission
	for _, p := range missing {
		if p.WriteOnly && c.opts.DryRun {
			warn = append(warn, p)
		} else {
			fatal = append(fatal, p)
		}
	}
	if len(warn) > 0 {
		logger.Info("Dry run: permissions a real run would need are missing", "missing", (&MissingPermissionsError{Missing: warn}).Error())
	}
	if len(fatal) > 0 {
		return &MissingPermissionsError{Missing: fatal}
	}
	return nil
}

func checkPermissions(ctx context.Context, client kube.Interface, perms []Permission) ([]Permission, error) {
	var missing []Permission
	for _, p := range perms {
		review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: p.Verb, Group: p.Group, Resource: p.Resource, Namespace: p.Namespace, Name: p.Name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		if !review.Status.Allowed {
			missing = append(missing, p)
		}
	}
	return missing, nil
}
