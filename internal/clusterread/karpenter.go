package clusterread

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Where Karpenter keeps reservedENIs: the RESERVED_ENIS environment variable of its Deployment
// (v0.33 and later), before that the aws.reservedENIs key of the karpenter-global-settings
// ConfigMap in the Deployment's namespace (v0.19-v0.32).
const (
	KarpenterAppLabel      = "app.kubernetes.io/name=karpenter"
	KarpenterEnvReserved   = "RESERVED_ENIS"
	KarpenterSettingsCM    = "karpenter-global-settings"
	KarpenterSettingsKey   = "aws.reservedENIs"
	maxKarpenterDeployment = 16
)

// KarpenterNamespaces are where the settings ConfigMap is looked for when no Karpenter
// Deployment can be seen: the namespaces its Helm chart is installed in by the docs.
var KarpenterNamespaces = []string{"karpenter", "kube-system"}

// Karpenter is Karpenter's reservedENIs when found (Source says where).
type Karpenter struct {
	Found        bool
	ReservedENIs int
	Source       string
	// Unread are the reads that could not be made (the Deployments' LIST, a ConfigMap's GET),
	// each naming the verb and resource: what is above was found without them.
	Unread []Missing
}

// Karpenter finds Karpenter's reservedENIs setting: the RESERVED_ENIS env of its Deployment,
// found by its label in any namespace, else the settings ConfigMap in the Deployments'
// namespaces, or in KarpenterNamespaces when no Deployment is visible (a GET each, so the caller
// never needs to list ConfigMaps). Found is false when neither exists; a Deployment without
// either is Found with reservedENIs 0 (Karpenter's default).
func (r Reader) Karpenter(ctx context.Context) (Karpenter, error) {
	var k Karpenter
	namespaces := KarpenterNamespaces
	deps, err := r.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: KarpenterAppLabel, Limit: r.chunk()})
	switch {
	case apierrors.IsForbidden(err):
		k.Unread = append(k.Unread, Missing{Resource: "deployments", Reason: Needs("list", "deployments", ""), Err: err})
	case err != nil:
		return k, fmt.Errorf("listing Karpenter deployments: %w", err)
	case len(deps.Items) > 0:
		namespaces = nil
		for i := range deps.Items[:min(len(deps.Items), maxKarpenterDeployment)] {
			d := &deps.Items[i]
			if v, ok := deploymentEnv(d, KarpenterEnvReserved); ok {
				if n, perr := strconv.Atoi(strings.TrimSpace(v)); perr == nil && n >= 0 {
					k.Found, k.ReservedENIs = true, n
					k.Source = fmt.Sprintf("deployment/%s/%s %s=%s", d.Namespace, d.Name, KarpenterEnvReserved, textsafe.ClipRaw(v, 20))
					return k, nil
				}
			}
			if !containsString(namespaces, d.Namespace) {
				namespaces = append(namespaces, d.Namespace)
			}
		}
		if r.karpenterSettings(ctx, namespaces, &k) {
			return k, nil
		}
		d := &deps.Items[0]
		k.Found = true
		k.Source = fmt.Sprintf("deployment/%s/%s without %s (default 0)", d.Namespace, d.Name, KarpenterEnvReserved)
		return k, nil
	}
	r.karpenterSettings(ctx, namespaces, &k)
	return k, nil
}

// karpenterSettings reads the settings ConfigMap of the first namespace that has one with a
// valid aws.reservedENIs into k; reads that fail are added to k.Unread.
func (r Reader) karpenterSettings(ctx context.Context, namespaces []string, k *Karpenter) bool {
	for _, ns := range namespaces {
		cm, err := r.Client.CoreV1().ConfigMaps(ns).Get(ctx, KarpenterSettingsCM, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			k.Unread = append(k.Unread, Missing{Resource: "configmap/" + ns + "/" + KarpenterSettingsCM, Reason: Needs("get", "configmaps", ns), Err: err})
			continue
		case err != nil:
			k.Unread = append(k.Unread, Missing{Resource: "configmap/" + ns + "/" + KarpenterSettingsCM, Reason: "reading it: " + textsafe.ClipRaw(err.Error(), 200), Err: err})
			continue
		}
		if v, ok := cm.Data[KarpenterSettingsKey]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				k.Found, k.ReservedENIs = true, n
				k.Source = fmt.Sprintf("configmap/%s/%s %s=%s", cm.Namespace, cm.Name, KarpenterSettingsKey, textsafe.ClipRaw(v, 20))
				return true
			}
		}
	}
	return false
}

// deploymentEnv is the literal value of the environment variable name in any of the
// Deployment's containers.
func deploymentEnv(d *appsv1.Deployment, name string) (string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value, true
			}
		}
	}
	return "", false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
