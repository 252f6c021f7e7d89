// Package clusterread is the one reader of the cluster state nodekeeper judges: the aws-node
// DaemonSet and its environment, Karpenter's reservedENIs, the ENIConfigs, each kubelet's
// configuration through the node proxy, the API server's /metrics, and whether a Node is Ready.
// doctor's gather, plan's gather and the controller read through it, so that they read each
// thing the same way and cannot disagree about what the cluster says.
//
// It reads with the clients it is given (Reader), writes nothing, and bounds every answer it
// reads whole (ReadBounded) and every per-node fan-out (EachBounded). A read RBAC forbids is not
// an error that stops a caller: it comes back as a *Missing naming the verb and the resource the
// caller lacks ("needs list on deployments"), which doctor reports as a missing fact and plan
// as a note.
package clusterread

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// Reader holds the clients the reads use, injected: fake clientsets in unit tests, a real API
// server in the control-plane tests.
type Reader struct {
	// Client reads the small objects: the aws-node DaemonSet, Karpenter's Deployments and
	// ConfigMaps, discovery, SelfSubjectAccessReviews.
	Client kube.Interface
	// Dynamic reads the custom resources (ENIConfigs).
	Dynamic dynamic.Interface
	// REST sends the raw requests: /configz through the node proxy and the API server's
	// /metrics (nil: those reads come back missing).
	REST rest.Interface
	// ChunkSize is the LIST page size (0: kube.DefaultChunkSize).
	ChunkSize int64
}

func (r Reader) chunk() int64 {
	if r.ChunkSize > 0 {
		return r.ChunkSize
	}
	return kube.DefaultChunkSize
}

// Missing is a read that could not be made: the resource asked for and why, usually the verb
// and resource the caller lacks ("needs list on pods"). It is the error of a forbidden read.
type Missing struct {
	Resource, Reason string
	// Err is the API server's answer, when there was one.
	Err error
}

func (m *Missing) Error() string { return m.Resource + ": " + m.Reason }
func (m *Missing) Unwrap() error { return m.Err }

// AsMissing returns err's *Missing, if it is one.
func AsMissing(err error) (*Missing, bool) {
	var m *Missing
	ok := errors.As(err, &m)
	return m, ok
}

// Needs is the reason of a forbidden read: "needs VERB on RESOURCE[ in NAMESPACE]".
func Needs(verb, resource, namespace string) string {
	s := "needs " + verb + " on " + resource
	if namespace != "" {
		s += " in " + namespace
	}
	return s
}

// Forbidden turns err into a *Missing naming the verb and resource when RBAC forbids it, and
// returns any other error as it is. what names the object in the Missing ("daemonset/kube-system/aws-node").
func Forbidden(err error, what, verb, resource, namespace string) error {
	if err != nil && apierrors.IsForbidden(err) {
		return &Missing{Resource: what, Reason: Needs(verb, resource, namespace), Err: err}
	}
	return err
}

// CanI asks the API server whether the caller may do what attrs say (a SelfSubjectAccessReview),
// with the authorizer's reason when not.
func (r Reader) CanI(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := r.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	reason := res.Status.Reason
	if reason == "" {
		reason = "denied"
	}
	return res.Status.Allowed, reason, nil
}

// NodeReady reports whether the Node's Ready condition is True: the one readiness test of the
// nodes whose kubelets are asked anything.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// served reports whether the API server serves gvr (CRDs that may not be installed).
func (r Reader) served(group, version, resource string) (bool, error) {
	gv := group + "/" + version
	l, err := r.Client.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, res := range l.APIResources {
		if res.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
