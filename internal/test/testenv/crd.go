package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRD creates the CustomResourceDefinition in the YAML file and returns once the API
// server serves gvr, its resource. When the test ends the CRD is deleted and waited for: its
// deletion finishes after the call returns, and the next test installing the same CRD must not
// find it still going.
func (e *Env) InstallCRD(t testing.TB, file string, gvr schema.GroupVersionResource) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := dyn.Resource(gvrCRD).Create(ctx, u, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(gvrCRD).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, last = dyn.Resource(gvrCRD).Get(ctx, u.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(last), nil
		}); err != nil {
			t.Errorf("CRD %s still there a minute after its deletion: %v", u.GetName(), last)
		}
	})
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := e.AdminClient().Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if last = err; err != nil {
			return false, nil
		}
		for _, r := range l.APIResources {
			if r.Name == gvr.Resource {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("%s not served: %v", gvr, last)
	}
}

// GVRENIConfig is the VPC CNI's ENIConfig, the custom-networking resource that names a zone's
// (or a label's) pod subnet; its CRD is installed by the tests that need it (InstallCRD).
var GVRENIConfig = schema.GroupVersionResource{Group: "crd.k8s.amazonaws.com", Version: "v1alpha1", Resource: "eniconfigs"}

// CreateENIConfig creates the ENIConfig name as the VPC CNI documents it: spec.subnet (left out
// when subnet is "", a misconfiguration doctor reports) and spec.securityGroups.
func (e *Env) CreateENIConfig(t testing.TB, name, subnet string, securityGroups ...string) {
	t.Helper()
	spec := map[string]any{}
	if subnet != "" {
		spec["subnet"] = subnet
	}
	if len(securityGroups) > 0 {
		sgs := make([]any, len(securityGroups))
		for i, sg := range securityGroups {
			sgs[i] = sg
		}
		spec["securityGroups"] = sgs
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GVRENIConfig.GroupVersion().String(), "kind": "ENIConfig",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(GVRENIConfig).Create(context.Background(), u, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatalf("create ENIConfig %s: %v", name, err)
	}
}
