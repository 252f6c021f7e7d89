package clusterread_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
)

func forbid(cs *fake.Clientset, verb, resource string) {
	cs.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC"))
	})
}

// TestAWSNodeEnv: the environment's literal values are read, ConfigMap and Secret references
// are listed unread, the pod's own fields (the stock manifest's MY_NODE_NAME) are neither; a
// forbidden GET is a Missing naming the verb, resource and namespace.
func TestAWSNodeEnv(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-node"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "aws-node", Image: "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2", Env: []corev1.EnvVar{
				{Name: "WARM_IP_TARGET", Value: "5"},
				{Name: "MY_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "MY_MEMORY", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
				{Name: "ENABLE_PREFIX_DELEGATION", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "pd"}}},
			}}}}}}}
	r := clusterread.Reader{Client: fake.NewClientset(ds)}
	a, err := r.AWSNode(context.Background(), "kube-system", "aws-node")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Env) != "map[WARM_IP_TARGET:5]" || fmt.Sprint(a.Unread) != "[ENABLE_PREFIX_DELEGATION]" || a.Version == nil || a.Version.String() != "1.19.2" {
		t.Errorf("env %v, unread %v, version %v", a.Env, a.Unread, a.Version)
	}

	cs := fake.NewClientset(ds)
	forbid(cs, "get", "daemonsets")
	_, err = clusterread.Reader{Client: cs}.AWSNode(context.Background(), "kube-system", "aws-node")
	if m, ok := clusterread.AsMissing(err); !ok || m.Resource != "daemonset/kube-system/aws-node" || m.Reason != "needs get on daemonsets in kube-system" {
		t.Errorf("forbidden: %v (%T)", err, err)
	}
}

func settingsCM(ns, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterread.KarpenterSettingsCM},
		Data: map[string]string{clusterread.KarpenterSettingsKey: v}}
}

// TestKarpenterFallback: with the Deployments' LIST forbidden, the settings ConfigMap is looked
// for in karpenter, then kube-system; each forbidden read is kept, naming its verb and resource.
func TestKarpenterFallback(t *testing.T) {
	cs := fake.NewClientset(settingsCM("kube-system", "1"))
	forbid(cs, "list", "deployments")
	cs.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "karpenter" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, clusterread.KarpenterSettingsCM, errors.New("RBAC"))
		}
		return false, nil, nil
	})
	k, err := clusterread.Reader{Client: cs}.Karpenter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !k.Found || k.ReservedENIs != 1 || k.Source != "configmap/kube-system/karpenter-global-settings aws.reservedENIs=1" {
		t.Errorf("found %+v", k)
	}
	var unread []string
	for _, m := range k.Unread {
		unread = append(unread, m.Resource+": "+m.Reason)
	}
	if want := "deployments: needs list on deployments; configmap/karpenter/karpenter-global-settings: needs get on configmaps in karpenter"; strings.Join(unread, "; ") != want {
		t.Errorf("unread %q, want %q", unread, want)
	}
}

// TestENIConfigsPaged: the ENIConfigs are listed page by page; a page that fails fails the
// read (never a partial list taken for the whole), and a forbidden LIST is a Missing.
func TestENIConfigsPaged(t *testing.T) {
	item := func(name, subnet string) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]any{"apiVersion": "crd.k8s.amazonaws.com/v1alpha1", "kind": "ENIConfig",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"subnet": " " + subnet + " "}}}
	}
	newReader := func(pages []func() (runtime.Object, error)) (clusterread.Reader, *[]string) {
		cs := fake.NewClientset()
		cs.Resources = []*metav1.APIResourceList{{GroupVersion: "crd.k8s.amazonaws.com/v1alpha1", APIResources: []metav1.APIResource{{Name: "eniconfigs"}}}}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{clusterread.GVRENIConfig: "ENIConfigList"})
		// The fake dynamic client does not pass the list options to its reactors: the requests
		// are counted.
		var continues []string
		dyn.PrependReactor("list", "eniconfigs", func(k8stesting.Action) (bool, runtime.Object, error) {
			continues = append(continues, "page")
			page := pages[0]
			pages = pages[1:]
			obj, err := page()
			return true, obj, err
		})
		return clusterread.Reader{Client: cs, Dynamic: dyn, ChunkSize: 2}, &continues
	}
	list := func(cont string, items ...unstructured.Unstructured) func() (runtime.Object, error) {
		return func() (runtime.Object, error) {
			l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "crd.k8s.amazonaws.com/v1alpha1", "kind": "ENIConfigList"}, Items: items}
			l.SetContinue(cont)
			return l, nil
		}
	}
	fail := func(err error) func() (runtime.Object, error) {
		return func() (runtime.Object, error) { return nil, err }
	}

	r, continues := newReader([]func() (runtime.Object, error){list("c1", item("a", "subnet-a"), item("b", "subnet-b")), list("", item("c", "subnet-c"))})
	l, err := r.ENIConfigs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(l.Subnets()) != "map[a:subnet-a b:subnet-b c:subnet-c]" || len(*continues) != 2 {
		t.Errorf("read %v in %d requests, want three ENIConfigs in two pages", l.Subnets(), len(*continues))
	}

	r, _ = newReader([]func() (runtime.Object, error){list("c1", item("a", "subnet-a"), item("b", "subnet-b")), fail(apierrors.NewInternalError(errors.New("etcd")))})
	if l, err := r.ENIConfigs(context.Background()); err == nil || !strings.Contains(err.Error(), "listing ENIConfigs") {
		t.Errorf("a failed second page: %v, %d items, want the error", err, len(l.Items))
	}

	r, _ = newReader([]func() (runtime.Object, error){fail(apierrors.NewForbidden(clusterread.GVRENIConfig.GroupResource(), "", errors.New("RBAC")))})
	_, err = r.ENIConfigs(context.Background())
	if m, ok := clusterread.AsMissing(err); !ok || m.Reason != "needs list on eniconfigs.crd.k8s.amazonaws.com" {
		t.Errorf("forbidden: %v (%T)", err, err)
	}
}
