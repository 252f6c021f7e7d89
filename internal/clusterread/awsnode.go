package clusterread

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

// AWSNode is the VPC CNI DaemonSet as read.
type AWSNode struct {
	// Resource names it ("daemonset/kube-system/aws-node").
	Resource string
	// DaemonSet is the object read (nil: not found), for what else a caller needs of it (the
	// add-on section's status counts).
	DaemonSet *appsv1.DaemonSet
	// Found: the DaemonSet exists; Container: it has the aws-node container.
	Found, Container bool
	// Selector is the DaemonSet's pod selector ("k8s-app=aws-node"), how its pods are found.
	Selector string
	// Env holds the container's literal environment; Unread the variables set from a ConfigMap
	// or Secret, which may be settings and are not read. Variables set from the pod's own
	// fields (fieldRef, resourceFieldRef: the stock manifest's MY_NODE_NAME, MY_POD_NAME) are in
	// neither: they are never a CNI setting, so nothing is assumed about them.
	Env    map[string]string
	Unread []string
	// Image is the container's image; Version the VPC CNI version read from it (nil: not a
	// versioned VPC CNI image).
	Image   string
	Version *eni.Version
}

// AWSNode reads the VPC CNI DaemonSet namespace/name, once. A DaemonSet that does not exist is
// Found false and no error; a forbidden read is a *Missing; other errors are returned as the
// API server gave them.
func (r Reader) AWSNode(ctx context.Context, namespace, name string) (AWSNode, error) {
	a := AWSNode{Resource: "daemonset/" + namespace + "/" + name}
	ds, err := r.Client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return a, nil
	}
	if err != nil {
		return a, Forbidden(err, a.Resource, "get", "daemonsets", namespace)
	}
	return AWSNodeOf(ds, a.Resource), nil
}

// AWSNodeOf is what AWSNode reads of a DaemonSet already in hand (nil: not found), for a caller
// that read it another way (explain's GET of one object).
func AWSNodeOf(ds *appsv1.DaemonSet, resource string) AWSNode {
	a := AWSNode{Resource: resource}
	if ds == nil {
		return a
	}
	a.DaemonSet, a.Found = ds, true
	if sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector); err == nil && !sel.Empty() {
		a.Selector = sel.String()
	}
	c := AWSNodeContainer(ds.Spec.Template.Spec.Containers)
	if c == nil {
		return a
	}
	a.Container, a.Image = true, c.Image
	a.Env, a.Unread = ContainerEnv(c)
	if v, err := eni.VersionFromImage(c.Image); err == nil {
		a.Version = &v
	}
	return a
}

// ContainerEnv splits a container's environment into the literal values and the names of the
// variables set from a ConfigMap or Secret; variables set from the pod's own fields are left out
// (see AWSNode.Env).
func ContainerEnv(c *corev1.Container) (env map[string]string, unread []string) {
	env = map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil:
			unread = append(unread, e.Name)
		}
	}
	return env, unread
}

// AWSNodeContainer finds the VPC CNI's container: named aws-node, else running its image.
func AWSNodeContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == "aws-node" {
			return &cs[i]
		}
	}
	for i := range cs {
		if strings.Contains(cs[i].Image, "amazon-k8s-cni:") {
			return &cs[i]
		}
	}
	return nil
}

// ReadError wraps an error of a read that is not a *Missing with what was being read; a
// *Missing is returned as it is.
func ReadError(err error, doing string) error {
	if err == nil {
		return nil
	}
	if _, ok := AsMissing(err); ok {
		return err
	}
	return fmt.Errorf("%s: %w", doing, err)
}
