package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// The ServiceMonitor and PrometheusRule are validated against prometheus-operator's own CRDs,
// taken from its Go module (the module zip carries the generated CRD manifests).
const (
	prometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	prometheusOperatorVersion = "v0.85.0"
)

const fieldManager = "nodekeeper-deploytest"

// warningRecorder collects the API server's warnings: deprecated APIs, unknown fields and Pod
// Security "would violate" messages all arrive as warnings rather than errors.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// install is what TestMain's control plane holds after both installations: the kustomize
// overlay with monitoring and authenticated metrics in namespace nodekeeper, and the Helm chart with fullValues as release
// "nk" in namespace nk-helm.
type installation struct {
	name      string
	namespace string
	sa        string
	leaderID  string
	objs      []*unstructured.Unstructured
	warnings  []string
}

var (
	installOnce sync.Once
	installs    []*installation
	installErr  error
)

func installed(t *testing.T) []*installation {
	t.Helper()
	installOnce.Do(func() {
		kust := &installation{name: "kustomize", namespace: "nodekeeper", sa: "nodekeeper", leaderID: "nodekeeper-controller",
			objs: kustomize(t, "deploy/kustomize/overlays/monitoring")}
		hlm := &installation{name: "helm", namespace: "nk-helm", sa: "nk-nodekeeper", leaderID: "nk-leader",
			objs: helmTemplate(t, "nk", "nk-helm", fullValues)}
		crds, err := monitoringCRDs(t)
		if err != nil {
			installErr = err
			return
		}
		installErr = installAll(crds, kust, hlm)
		installs = []*installation{kust, hlm}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installs
}

func installAll(crds []*unstructured.Unstructured, kust, hlm *installation) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := &warningRecorder{}
	cfg := env.AdminConfig()
	cfg.WarningHandler = w
	if err := apply(ctx, cfg, crds); err != nil {
		return fmt.Errorf("prometheus-operator CRDs: %w", err)
	}
	if err := waitEstablished(ctx, cfg, crds); err != nil {
		return err
	}
	w.take()
	if err := apply(ctx, cfg, kust.objs); err != nil {
		return fmt.Errorf("kustomize: %w", err)
	}
	kust.warnings = w.take()
	// helm install --create-namespace, plus the Pod Security labels docs/install.md asks for;
	// the chart's dashboard goes to the monitoring namespace.
	helmNamespaces := []*unstructured.Unstructured{namespaceObject(hlm.namespace, true), namespaceObject("monitoring", false)}
	if err := apply(ctx, cfg, append(helmNamespaces, hlm.objs...)); err != nil {
		return fmt.Errorf("helm: %w", err)
	}
	hlm.warnings = w.take()
	return nil
}

func namespaceObject(name string, restricted bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	if restricted {
		u.SetLabels(map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		})
	}
	return u
}

// monitoringCRDs reads the ServiceMonitor and PrometheusRule CRDs from the pinned
// prometheus-operator module (downloaded into the module cache on first use).
func monitoringCRDs(t *testing.T) ([]*unstructured.Unstructured, error) {
	out, err := run(t.TempDir(), nil, "go", "mod", "download", "-json", prometheusOperatorModule+"@"+prometheusOperatorVersion)
	if err != nil {
		return nil, fmt.Errorf("downloading the prometheus-operator CRDs: %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download %s: %v %s\n%s", prometheusOperatorModule, err, mod.Error, out)
	}
	var crds []*unstructured.Unstructured
	for _, name := range []string{"servicemonitors", "prometheusrules"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+name+".yaml"))
		if err != nil {
			return nil, err
		}
		objs, err := parseManifests(data)
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", name, err)
		}
		crds = append(crds, objs...)
	}
	return crds, nil
}

func waitEstablished(ctx context.Context, cfg *rest.Config, crds []*unstructured.Unstructured) error {
	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range crds {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := dyn.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.GetName(), err)
		}
	}
	return nil
}

// applyOrder puts the objects others depend on first, as kubectl and Helm do.
var applyOrder = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// apply server-side applies objects with strict field validation: an unknown or duplicated field,
// a wrong type or a CRD schema violation is an error, not a silently dropped field.
func apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	objs = slices.Clone(objs)
	rank := func(u *unstructured.Unstructured) int {
		if i := slices.Index(applyOrder, u.GetKind()); i >= 0 {
			return i
		}
		return len(applyOrder)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	var mapper meta.RESTMapper
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		var mapping *meta.RESTMapping
		// Discovery is re-read when a kind is unknown: a CRD applied a moment ago takes a
		// little while to be served.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			if mapper != nil {
				if mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
					return true, nil
				}
			}
			groups, derr := restmapper.GetAPIGroupResources(dc)
			if derr != nil {
				return false, nil
			}
			mapper = restmapper.NewDiscoveryRESTMapper(groups)
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("%s %s: the API server does not serve this kind: %w", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				return fmt.Errorf("%s %s is namespaced but has no namespace", gvk.Kind, o.GetName())
			}
			ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager:    fieldManager,
			Force:           ptr.To(true),
			FieldValidation: metav1.FieldValidationStrict,
		})
		if err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// Both installations apply cleanly to a real API server with strict field validation (the
// ServiceMonitor and PrometheusRule against prometheus-operator's CRD schemas), without a single
// warning (deprecations, Pod Security), and every object is there afterwards.
func TestApply(t *testing.T) {
	for _, in := range installed(t) {
		t.Run(in.name, func(t *testing.T) {
			if len(in.warnings) > 0 {
				t.Errorf("the API server warned:\n%s", strings.Join(in.warnings, "\n"))
			}
			client := env.AdminClient()
			ctx := context.Background()
			rendered := ofKind(in.objs, "Deployment")[0]
			d, err := client.AppsV1().Deployments(rendered.GetNamespace()).Get(ctx, rendered.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The API server's defaulting must not have changed what the test checked offline.
			checkPodSecurity(t, d.Spec.Template.Spec)
			if _, err := client.CoreV1().ServiceAccounts(in.namespace).Get(ctx, in.sa, metav1.GetOptions{}); err != nil {
				t.Error(err)
			}
			for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
				if len(ofKind(in.objs, kind)) != 1 {
					t.Errorf("%d %s objects applied, want 1", len(ofKind(in.objs, kind)), kind)
				}
			}
		})
	}
}

// The API server's Pod Security admission, enforcing "restricted" on the namespace, admits the
// controller's pod as rendered, and rejects it once a single hardening setting is removed (so the
// namespace really enforces, and the acceptance means something).
func TestPodSecurityRestricted(t *testing.T) {
	for _, in := range installed(t) {
		t.Run(in.name, func(t *testing.T) {
			ctx := context.Background()
			w := &warningRecorder{}
			cfg := env.AdminConfig()
			cfg.WarningHandler = w
			client := kubernetes.NewForConfigOrDie(cfg)
			d := mustTyped[*appsv1.Deployment](t, ofKind(in.objs, "Deployment")[0])
			pod := func(mutate func(*corev1.PodSpec)) *corev1.Pod {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "pod-security-check", Namespace: in.namespace, Labels: d.Spec.Template.Labels},
					Spec:       *d.Spec.Template.Spec.DeepCopy(),
				}
				if mutate != nil {
					mutate(&p.Spec)
				}
				return p
			}
			dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager}
			if _, err := client.CoreV1().Pods(in.namespace).Create(ctx, pod(nil), dryRun); err != nil {
				t.Fatalf("the controller pod is refused: %v", err)
			}
			if ws := w.take(); len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}
			for name, mutate := range map[string]func(*corev1.PodSpec){
				"capabilities kept": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities = nil },
				"privilege escalation": func(s *corev1.PodSpec) {
					s.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
				},
				"root allowed": func(s *corev1.PodSpec) {
					s.SecurityContext.RunAsNonRoot, s.Containers[0].SecurityContext.RunAsNonRoot = nil, nil
					s.SecurityContext.RunAsUser, s.Containers[0].SecurityContext.RunAsUser = nil, nil
				},
			} {
				_, err := client.CoreV1().Pods(in.namespace).Create(ctx, pod(mutate), dryRun)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
					t.Errorf("%s: want a PodSecurity rejection, got %v", name, err)
				}
			}
		})
	}
}

type access struct {
	verb, group, resource, namespace, name string
	allowed                                bool
}

// accessMatrix is what the controller's service account may and may not do. Everything the
// controller needs is allowed; the neighbouring permissions a careless Role would grant are not.
func accessMatrix(ns, leaderID string) []access {
	const coord, events = "coordination.k8s.io", "events.k8s.io"
	return []access{
		// node heartbeat leases
		{"get", coord, "leases", "kube-node-lease", "ip-10-0-0-1", true},
		{"list", coord, "leases", "kube-node-lease", "", true},
		{"watch", coord, "leases", "kube-node-lease", "", true},
		{"delete", coord, "leases", "kube-node-lease", "ip-10-0-0-1", true},
		{"patch", coord, "leases", "kube-node-lease", "ip-10-0-0-1", true},
		{"create", coord, "leases", "kube-node-lease", "", false},
		{"update", coord, "leases", "kube-node-lease", "ip-10-0-0-1", false},
		{"deletecollection", coord, "leases", "kube-node-lease", "", false},
		{"list", coord, "leases", "", "", false},
		{"list", coord, "leases", "kube-system", "", false},
		{"delete", coord, "leases", "kube-system", "kube-controller-manager", false},
		{"patch", coord, "leases", "default", "x", false},
		// nodes
		{"get", "", "nodes", "", "ip-10-0-0-1", true},
		{"list", "", "nodes", "", "", true},
		{"watch", "", "nodes", "", "", true},
		{"delete", "", "nodes", "", "ip-10-0-0-1", false},
		{"patch", "", "nodes", "", "ip-10-0-0-1", false},
		{"update", "", "nodes", "", "ip-10-0-0-1", false},
		{"create", "", "nodes", "", "", false},
		// events: about leases in kube-node-lease (events.k8s.io), about the leader lock in
		// its own namespace (core, as client-go's election lock records them); nowhere else
		{"create", events, "events", "kube-node-lease", "", true},
		{"patch", events, "events", "kube-node-lease", "e", true},
		{"create", "", "events", ns, "", true},
		{"patch", "", "events", ns, "e", true},
		{"create", "", "events", "kube-node-lease", "", false},
		{"patch", "", "events", "kube-node-lease", "e", false},
		{"create", events, "events", ns, "", false},
		{"create", "", "events", "default", "", false},
		{"create", events, "events", "default", "", false},
		{"create", "", "events", "kube-system", "", false},
		{"patch", events, "events", "kube-system", "e", false},
		{"create", "", "events", "", "", false},
		{"create", events, "events", "", "", false},
		{"delete", events, "events", "kube-node-lease", "e", false},
		{"update", events, "events", "kube-node-lease", "e", false},
		{"delete", "", "events", ns, "e", false},
		{"list", "", "events", "", "", false},
		{"list", events, "events", "kube-node-lease", "", false},
		// --metrics-secure (both installations): review the scrapers' tokens and permissions
		{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		{"list", "authorization.k8s.io", "subjectaccessreviews", "", "", false},
		// leader election in its own namespace
		{"get", coord, "leases", ns, leaderID, true},
		{"update", coord, "leases", ns, leaderID, true},
		{"create", coord, "leases", ns, "", true},
		{"get", coord, "leases", ns, "some-other-lock", false},
		{"update", coord, "leases", ns, "some-other-lock", false},
		{"delete", coord, "leases", ns, leaderID, false},
		{"patch", coord, "leases", ns, leaderID, false},
		{"list", coord, "leases", ns, "", false},
		{"watch", coord, "leases", ns, "", false},
		// nothing else
		{"get", "", "secrets", ns, "x", false},
		{"list", "", "secrets", "", "", false},
		{"list", "", "pods", ns, "", false},
		{"get", "", "configmaps", ns, "x", false},
		{"create", "", "pods", ns, "", false},
	}
}

// The RBAC as applied grants the controller's service account exactly the access matrix, as the
// API server's RBAC authorizer decides it (SubjectAccessReview).
func TestRBACAccessMatrix(t *testing.T) {
	ctx := context.Background()
	client := env.AdminClient()
	all := installed(t)
	for _, in := range all {
		t.Run(in.name, func(t *testing.T) {
			user := "system:serviceaccount:" + in.namespace + ":" + in.sa
			groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + in.namespace, "system:authenticated"}
			matrix := accessMatrix(in.namespace, in.leaderID)
			// Another installation's leader lock is out of reach.
			for _, other := range all {
				if other != in {
					matrix = append(matrix, access{"update", "coordination.k8s.io", "leases", other.namespace, other.leaderID, false})
				}
			}
			for _, a := range matrix {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user, Groups: groups,
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace, Name: a.name,
					},
				}}
				res, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status.Allowed != a.allowed {
					t.Errorf("%s %s.%s in %q name %q: allowed=%v, want %v (%s)", a.verb, a.resource, a.group, a.namespace, a.name,
						res.Status.Allowed, a.allowed, res.Status.Reason)
				}
			}
		})
	}
}

// Real requests with the service account's token do what the controller does: read, adopt
// (patch) and delete a node lease with preconditions, read Nodes, record an event, and run leader
// election on its own lock; the writes it must never make are refused.
func TestServiceAccountRequests(t *testing.T) {
	// The Helm installation: the kustomize one's leader lock belongs to the controller that
	// TestControllerWithManifests runs.
	in := installed(t)[1]
	ctx := context.Background()
	admin := env.AdminClient()
	sa := kubernetes.NewForConfigOrDie(env.ServiceAccount(t, in.namespace, in.sa))

	now := metav1.NewMicroTime(time.Now())
	l, err := admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "deploytest-leaked"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("deploytest-leaked"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases := sa.CoordinationV1().Leases("kube-node-lease")
	if list, err := leases.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) == 0 {
		t.Fatalf("list node leases: %v (%d items)", err, len(list.Items))
	}
	patched, err := leases.Patch(ctx, l.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"deploytest":"patched"}}}`),
		metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		t.Fatalf("patch a node lease: %v", err)
	}
	if _, err := sa.CoreV1().Nodes().Get(ctx, "deploytest-no-such-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("live Node GET: want NotFound, got %v", err)
	}
	err = leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &patched.UID, ResourceVersion: &patched.ResourceVersion}})
	if err != nil {
		t.Fatalf("delete a node lease with preconditions: %v", err)
	}

	forbidden := map[string]error{}
	_, forbidden["create a node lease"] = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "deploytest-forged"}}, metav1.CreateOptions{})
	forbidden["delete a Node"] = sa.CoreV1().Nodes().Delete(ctx, "deploytest-no-such-node", metav1.DeleteOptions{})
	_, forbidden["list leases in kube-system"] = sa.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{})
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: want Forbidden, got %v", what, err)
		}
	}

	// Events as the controller records them: events.k8s.io about a lease in its namespace, core
	// Events (leader election) in the controller's own namespace; nothing else.
	_, err = sa.EventsV1().Events("kube-node-lease").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "deploytest-"},
		EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "nodekeeper.io/controller", ReportingInstance: "deploytest",
		Action: "Delete", Reason: "Deleted", Note: "deploytest", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-node-lease", Name: l.Name, UID: l.UID},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("record an event about a lease: %v", err)
	}
	coreEvent := func(ns string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "deploytest-"},
			InvolvedObject: corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: ns, Name: in.leaderID},
			Reason:         "LeaderElection", Message: "deploytest", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: fieldManager},
		}
	}
	if _, err := sa.CoreV1().Events(in.namespace).Create(ctx, coreEvent(in.namespace), metav1.CreateOptions{}); err != nil {
		t.Errorf("record a leader election event: %v", err)
	}
	for _, ns := range []string{"kube-node-lease", "default", "kube-system"} {
		if _, err := sa.CoreV1().Events(ns).Create(ctx, coreEvent(ns), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("record a core event in %s: want Forbidden, got %v", ns, err)
		}
	}

	lock := sa.CoordinationV1().Leases(in.namespace)
	held, err := lock.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: in.leaderID},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("deploytest"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the leader-election lease: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.CoordinationV1().Leases(in.namespace).Delete(context.Background(), in.leaderID, metav1.DeleteOptions{})
	})
	if held, err = lock.Get(ctx, in.leaderID, metav1.GetOptions{}); err != nil {
		t.Fatalf("get the leader-election lease: %v", err)
	}
	renewed := metav1.NewMicroTime(time.Now())
	held.Spec.RenewTime = &renewed
	if _, err := lock.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renew the leader-election lease: %v", err)
	}
	if err := lock.Delete(ctx, in.leaderID, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete the leader-election lease: want Forbidden, got %v", err)
	}
}
