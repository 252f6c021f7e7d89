package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodekeeper/nodekeeper/internal/controller/command"
)

// fullValues turns on every optional object and changes every controller setting, so that each
// template branch is rendered and checked at least once.
const fullValues = `
replicaCount: 3
image:
  repository: registry.example/platform/nodekeeper
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
controller:
  gracePeriod: 2h30m
  dryRun: true
  qps: 50.5
  burst: 100
  workers: 8
  leaderElection:
    enabled: true
    id: nk-leader
    leaseDuration: 1m
    renewDeadline: 40s
    retryPeriod: 5s
  logVerbosity: 4
  extraVolumeMounts:
    - name: ca
      mountPath: /etc/nodekeeper/ca
      readOnly: true
extraVolumes:
  - name: ca
    configMap:
      name: corporate-ca
logging:
  format: json
priorityClassName: system-cluster-critical
podAnnotations:
  example.com/owner: platform
podLabels:
  team: platform
nodeSelector:
  kubernetes.io/os: linux
tolerations:
  - key: CriticalAddonsOnly
    operator: Exists
metrics:
  secure: true
  certSecret: nk-metrics-tls
  serviceMonitor:
    enabled: true
    interval: 1m
    tlsConfig:
      ca:
        secret:
          name: nk-metrics-tls
          key: ca.crt
      serverName: nk-nodekeeper-metrics.nk-helm.svc
    additionalLabels:
      release: kube-prometheus-stack
    relabelings:
      - targetLabel: cluster
        replacement: prod-eu-1
    metricRelabelings:
      - action: drop
        sourceLabels: [__name__]
        regex: go_gc_.*
  prometheusRule:
    enabled: true
    additionalLabels:
      release: kube-prometheus-stack
    additionalRuleLabels:
      team: platform
    disabled:
      NodekeeperErrors: true
grafanaDashboard:
  enabled: true
  namespace: monitoring
networkPolicy:
  enabled: true
  probesFrom:
    - ipBlock:
        cidr: 10.0.0.0/16
`

// rendering is one way of producing the manifests; every check below runs over all of them.
type rendering struct {
	name      string
	namespace string // where the controller runs
	leaderID  string
	objs      func(t *testing.T) []*unstructured.Unstructured
}

var renderings = []rendering{
	{"helm-defaults", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return helmTemplate(t, "nodekeeper", "nodekeeper", "")
	}},
	{"helm-full", "nk-helm", "nk-leader", func(t *testing.T) []*unstructured.Unstructured {
		return helmTemplate(t, "nk", "nk-helm", fullValues)
	}},
	{"kustomize-base", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return kustomize(t, "deploy/kustomize/base")
	}},
	{"kustomize-monitoring", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return kustomize(t, "deploy/kustomize/overlays/monitoring")
	}},
	{"kustomize-metrics-insecure", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return kustomize(t, "deploy/kustomize/overlays/metrics-insecure")
	}},
	{"kustomize-aws", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return kustomize(t, "deploy/kustomize/overlays/aws")
	}},
	{"kustomize-checks", "nodekeeper", "nodekeeper-controller", func(t *testing.T) []*unstructured.Unstructured {
		return kustomize(t, "deploy/kustomize/overlays/checks")
	}},
}

func TestHelmLint(t *testing.T) {
	for _, tc := range []struct{ name, values string }{
		{"defaults", ""},
		{"full", fullValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(repoRoot(t), strings.NewReader(tc.values), helm(t), "lint", "--strict", chartDir, "--values", "-")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
			// --strict turns warnings into failures; INFO lines (a missing icon) remain.
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "[WARNING]") || strings.HasPrefix(line, "[ERROR]") {
					t.Errorf("helm lint: %s", line)
				}
			}
		})
	}
}

// Every object of every rendering decodes into its Go type without unknown or duplicate fields,
// and the set of kinds is the expected one.
func TestRenderedObjects(t *testing.T) {
	wantKinds := map[string][]string{
		// Metrics are secure by default: the review permissions and the metrics-reader ClusterRole.
		"helm-defaults": {"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Deployment", "PodDisruptionBudget", "Role", "Role",
			"RoleBinding", "RoleBinding", "Service", "ServiceAccount"},
		"helm-full": {"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ConfigMap", "Deployment", "NetworkPolicy",
			"PodDisruptionBudget", "PrometheusRule", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"},
		"kustomize-base": {"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Deployment", "Namespace", "PodDisruptionBudget",
			"Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount"},
		"kustomize-monitoring": {"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ConfigMap", "Deployment", "Namespace",
			"PodDisruptionBudget", "PrometheusRule", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"},
		// --metrics-secure=false: no review permissions, no metrics-reader ClusterRole.
		"kustomize-metrics-insecure": {"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Namespace", "PodDisruptionBudget", "PrometheusRule", "Role", "Role",
			"RoleBinding", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"},
	}
	// The aws component adds flags and an annotation, no object.
	wantKinds["kustomize-aws"] = wantKinds["kustomize-monitoring"]
	// The checks component adds its ClusterRole and the Roles in kube-system and default, bound.
	wantKinds["kustomize-checks"] = append(slices.Clone(wantKinds["kustomize-monitoring"]), "ClusterRole", "ClusterRoleBinding", "Role", "Role", "RoleBinding", "RoleBinding")
	sort.Strings(wantKinds["kustomize-checks"])
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			objs := r.objs(t)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				if builtIn(o) {
					if _, err := typed(o); err != nil {
						t.Error(err)
					}
				}
				if ns := o.GetNamespace(); ns == "" && namespaced(o.GetKind()) {
					t.Errorf("%s %s has no namespace", o.GetKind(), o.GetName())
				}
			}
			sort.Strings(kinds)
			if !slices.Equal(kinds, wantKinds[r.name]) {
				t.Errorf("kinds = %v, want %v", kinds, wantKinds[r.name])
			}
		})
	}
}

func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition":
		return false
	}
	return true
}

// The controller runs as a non-root user on a read-only root filesystem with every capability
// dropped, no privilege escalation and the runtime's default seccomp profile, in every rendering.
func TestSecurityContext(t *testing.T) {
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			for _, u := range ofKind(r.objs(t), "Deployment") {
				checkPodSecurity(t, mustTyped[*appsv1.Deployment](t, u).Spec.Template.Spec)
			}
		})
	}
}

func checkPodSecurity(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil {
		t.Fatal("pod has no securityContext")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("pod securityContext.runAsUser is unset or root")
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("pod uses a host namespace")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	if len(spec.Containers) == 0 {
		t.Fatal("pod has no containers")
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("container %s: runAsNonRoot is not true", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("container %s runs as root", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: readOnlyRootFilesystem is not true", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s is privileged", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s: capabilities = %+v, want drop [ALL] and no add", c.Name, sc.Capabilities)
		}
		if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s has no memory request or limit", c.Name)
		}
	}
}

// normalizedRBAC is the authorization content of a rendering: every Role, ClusterRole and binding
// keyed by kind/namespace/name, with labels and other metadata left out.
func normalizedRBAC(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, u := range objs {
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		switch u.GetKind() {
		case "Role":
			out[key] = mustTyped[*rbacv1.Role](t, u).Rules
		case "ClusterRole":
			out[key] = mustTyped[*rbacv1.ClusterRole](t, u).Rules
		case "RoleBinding":
			b := mustTyped[*rbacv1.RoleBinding](t, u)
			out[key] = [2]any{b.RoleRef, b.Subjects}
		case "ClusterRoleBinding":
			b := mustTyped[*rbacv1.ClusterRoleBinding](t, u)
			out[key] = [2]any{b.RoleRef, b.Subjects}
		case "ServiceAccount":
			out[key] = true
		}
	}
	return out
}

// The Helm chart installed as release "nodekeeper" in namespace "nodekeeper" grants exactly what
// the kustomize base grants, object for object (with the default secure metrics, the review
// permissions and the metrics-reader ClusterRole); with metrics.secure=false, exactly what the
// metrics-insecure overlay grants.
func TestRBACHelmMatchesKustomize(t *testing.T) {
	for _, tc := range []struct {
		name, dir, values string
		objects           int
	}{
		{"defaults", "deploy/kustomize/base", "", 10},                                                     // ServiceAccount, 2 Roles, 3 ClusterRoles, 4 bindings
		{"metrics-insecure", "deploy/kustomize/overlays/metrics-insecure", "metrics: {secure: false}", 7}, // - 2 ClusterRoles, 1 binding
		{"checks", "deploy/kustomize/overlays/checks", "checks: {enabled: true}", 16},                     // + ClusterRole, 2 Roles, 3 bindings
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := normalizedRBAC(t, kustomize(t, tc.dir))
			got := normalizedRBAC(t, helmTemplate(t, "nodekeeper", "nodekeeper", tc.values))
			if len(want) != tc.objects {
				t.Fatalf("%s has %d RBAC objects, want %d", tc.dir, len(want), tc.objects)
			}
			if !reflect.DeepEqual(got, want) {
				for k := range union(got, want) {
					if !reflect.DeepEqual(got[k], want[k]) {
						t.Errorf("%s:\n helm:      %+v\n kustomize: %+v", k, got[k], want[k])
					}
				}
			}
		})
	}
}

func union(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// The leader-election Role follows the configured lease name, and disappears with leader election.
func TestRBACLeaderElection(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		wantID       string // "" = no leader-election Role
	}{
		{"default id", "", "nodekeeper-controller"},
		{"custom id", "controller: {leaderElection: {enabled: true, id: other-lock}}", "other-lock"},
		{"disabled", "controller: {leaderElection: {enabled: false, id: nodekeeper-controller}}\nreplicaCount: 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, "nodekeeper", "ops", tc.values)
			role := find(objs, "Role", "ops", "nodekeeper-leader-election")
			args := controllerArgs(t, objs)
			if tc.wantID == "" {
				if role != nil || find(objs, "RoleBinding", "ops", "nodekeeper-leader-election") != nil {
					t.Error("leader-election Role or RoleBinding rendered with leader election disabled")
				}
				if args["leader-elect"] != "false" {
					t.Errorf("--leader-elect=%s, want false", args["leader-elect"])
				}
				return
			}
			rules := mustTyped[*rbacv1.Role](t, role).Rules
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{tc.wantID}, Verbs: []string{"get", "update"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			}
			if !reflect.DeepEqual(rules, want) {
				t.Errorf("rules = %+v, want %+v", rules, want)
			}
			if args["leader-election-id"] != tc.wantID {
				t.Errorf("--leader-election-id=%s, want %s", args["leader-election-id"], tc.wantID)
			}
		})
	}
}

// controllerArgs returns the flags of the only Deployment's controller container as name→value,
// as the process receives them (expandEnv), failing on anything that is not a --name=value flag
// of the image's nodekeeper-controller (which takes no subcommand).
func controllerArgs(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	deps := ofKind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments, want 1", len(deps))
	}
	c := controllerContainer(t, mustTyped[*appsv1.Deployment](t, deps[0]))
	if len(c.Command) != 0 {
		t.Errorf("container sets command %v; the image's entrypoint must stay", c.Command)
	}
	flags := map[string]string{}
	for _, a := range expandEnv(c.Args, c.Env) {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("argument %q is not --name=value", a)
			continue
		}
		if _, dup := flags[name]; dup {
			t.Errorf("flag --%s given twice", name)
		}
		flags[name] = value
	}
	return flags
}

var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandEnv replaces $(NAME) in args with the value of the container's environment variable NAME,
// as the kubelet does before it starts the container. Only literal values are known before the
// pod runs; a reference to any other variable stays as written (and so fails the flag checks).
func expandEnv(args []string, env []corev1.EnvVar) []string {
	values := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			values[e.Name] = e.Value
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = envReference.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := values[envReference.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
	}
	return out
}

func controllerContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container named controller", d.Name)
	return corev1.Container{}
}

// Each rendering passes only contract flags, with the values it was configured with, and wires
// ports, probes, the metrics Service and POD_NAMESPACE consistently.
func TestControllerWiring(t *testing.T) {
	want := map[string]map[string]string{
		"helm-defaults": {"grace-period": "1h", "dry-run": "false", "qps": "20", "burst": "50", "workers": "4", "leader-elect": "true",
			"leader-election-id": "nodekeeper-controller", "leader-election-lease-duration": "15s", "leader-election-renew-deadline": "10s",
			"leader-election-retry-period": "2s", "metrics-bind-address": ":8080", "health-probe-bind-address": ":8081", "v": "2", "logging-format": "text",
			"metrics-secure": "true"},
		"helm-full": {"grace-period": "2h30m", "dry-run": "true", "qps": "50.5", "burst": "100", "workers": "8", "leader-elect": "true",
			"leader-election-id": "nk-leader", "leader-election-lease-duration": "1m", "leader-election-renew-deadline": "40s",
			"leader-election-retry-period": "5s", "metrics-bind-address": ":8080", "health-probe-bind-address": ":8081", "v": "4", "logging-format": "json"},
	}
	want["helm-full"]["metrics-secure"] = "true"
	want["helm-full"]["metrics-cert-dir"] = "/etc/nodekeeper/metrics-certs"
	// The kustomize base runs with the chart's defaults.
	want["kustomize-base"] = want["helm-defaults"]
	want["kustomize-monitoring"] = want["helm-defaults"]
	want["kustomize-metrics-insecure"] = maps.Clone(want["helm-defaults"])
	want["kustomize-metrics-insecure"]["metrics-secure"] = "false"
	// The aws overlay adds the EC2 loop's flags with the chart's defaults and its cluster's name.
	want["kustomize-aws"] = maps.Clone(want["helm-defaults"])
	maps.Copy(want["kustomize-aws"], map[string]string{"aws": "true", "eks-cluster": "my-cluster", "aws-interval": "5m", "register-grace": "10m"})
	// The checks overlay adds the check loop's flags with the chart's defaults.
	want["kustomize-checks"] = maps.Clone(want["helm-defaults"])
	maps.Copy(want["kustomize-checks"], map[string]string{"checks": "true", "checks-interval": "5m", "checks-headroom-alert": "10"})
	wantReplicas := map[string]int32{"helm-defaults": 2, "helm-full": 3, "kustomize-base": 2, "kustomize-monitoring": 2, "kustomize-metrics-insecure": 2, "kustomize-aws": 2, "kustomize-checks": 2}

	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			objs := r.objs(t)
			args := controllerArgs(t, objs)
			for name := range args {
				if !controllerFlags[name] {
					t.Errorf("flag --%s is not a `nodekeeper controller` flag of the contract", name)
				}
			}
			if !reflect.DeepEqual(args, want[r.name]) {
				t.Errorf("flags = %v\nwant    %v", args, want[r.name])
			}
			d := mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])
			if got := *d.Spec.Replicas; got != wantReplicas[r.name] {
				t.Errorf("replicas = %d, want %d", got, wantReplicas[r.name])
			}
			c := controllerContainer(t, d)
			checkEnvFieldRef(t, c, "POD_NAMESPACE", "metadata.namespace")
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if fmt.Sprintf(":%d", ports["metrics"]) != args["metrics-bind-address"] {
				t.Errorf("metrics port %d does not match --metrics-bind-address=%s", ports["metrics"], args["metrics-bind-address"])
			}
			if fmt.Sprintf(":%d", ports["health"]) != args["health-probe-bind-address"] {
				t.Errorf("health port %d does not match --health-probe-bind-address=%s", ports["health"], args["health-probe-bind-address"])
			}
			for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
					t.Errorf("probe for %s is %+v, want an HTTP GET of %s on port health", path, probe, path)
				}
			}
			spec := d.Spec.Template.Spec
			if len(spec.TopologySpreadConstraints) == 0 || spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
				t.Error("no topology spread constraints or pod anti-affinity: replicas may share a node")
			}
			for _, tsc := range spec.TopologySpreadConstraints {
				if !selects(tsc.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
					t.Errorf("topology spread on %s does not select the pods", tsc.TopologyKey)
				}
			}

			svcs := ofKind(objs, "Service")
			if len(svcs) != 1 {
				t.Fatalf("%d Services, want 1", len(svcs))
			}
			svc := mustTyped[*corev1.Service](t, svcs[0])
			if !selects(svc.Spec.Selector, d.Spec.Template.Labels) {
				t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("Service ports = %+v, want one named metrics targeting the metrics port", svc.Spec.Ports)
			}
			for _, u := range ofKind(objs, "ServiceMonitor") {
				sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
				if !selects(sel, svc.Labels) {
					t.Errorf("ServiceMonitor selector %v does not select the Service labels %v", sel, svc.Labels)
				}
				eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
				if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" {
					t.Errorf("ServiceMonitor endpoints = %v, want the metrics port", eps)
					continue
				}
				checkScrapeScheme(t, eps[0].(map[string]any), args["metrics-secure"] == "true")
			}
			for _, u := range ofKind(objs, "PodDisruptionBudget") {
				pdb := mustTyped[*policyv1.PodDisruptionBudget](t, u)
				if !selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
					t.Error("PodDisruptionBudget does not select the pods")
				}
				if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
					t.Errorf("PodDisruptionBudget minAvailable %v leaves no room for a voluntary disruption of %d replicas", pdb.Spec.MinAvailable, *d.Spec.Replicas)
				}
			}
			if d.Spec.Template.Spec.ServiceAccountName == "" || d.Spec.Template.Spec.ServiceAccountName == "default" {
				t.Error("the controller runs as the default service account")
			}
		})
	}
}

// checkScrapeScheme: a ServiceMonitor endpoint scrapes --metrics-secure over HTTPS with
// Prometheus's service account token and a TLS configuration (the self-signed certificate is
// skipped, a given one verified), and plain metrics over HTTP without a token.
func checkScrapeScheme(t *testing.T, ep map[string]any, secure bool) {
	t.Helper()
	if !secure {
		if s, ok := ep["scheme"]; ok && s != "http" || ep["bearerTokenFile"] != nil || ep["authorization"] != nil {
			t.Errorf("ServiceMonitor endpoint %v: HTTPS or a token without --metrics-secure", ep)
		}
		return
	}
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("ServiceMonitor endpoint %v: want scheme https and Prometheus's service account token with --metrics-secure", ep)
	}
	if tls, ok := ep["tlsConfig"].(map[string]any); !ok || len(tls) == 0 {
		t.Errorf("ServiceMonitor endpoint %v: no tlsConfig with --metrics-secure", ep)
	}
}

func checkEnvFieldRef(t *testing.T, c corev1.Container, name, fieldPath string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != fieldPath {
				t.Errorf("env %s = %+v, want the downward API field %s", name, e, fieldPath)
			}
			return
		}
	}
	t.Errorf("no env %s", name)
}

// selects reports whether a non-empty selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Chart options beyond the controller flags render as documented.
func TestHelmValues(t *testing.T) {
	const ns = "ops"
	for _, tc := range []struct {
		name, values string
		check        func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"image tag defaults to the app version", "", func(t *testing.T, objs []*unstructured.Unstructured) {
			img := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])).Image
			if img != "ghcr.io/nodekeeper/nodekeeper:v"+chartAppVersion(t) {
				t.Errorf("image = %s", img)
			}
		}},
		{"digest wins over tag", "image: {tag: v9, digest: sha256:" + strings.Repeat("ab", 32) + "}", func(t *testing.T, objs []*unstructured.Unstructured) {
			img := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])).Image
			if img != "ghcr.io/nodekeeper/nodekeeper@sha256:"+strings.Repeat("ab", 32) {
				t.Errorf("image = %s", img)
			}
		}},
		{"single replica has no PDB", "replicaCount: 1", func(t *testing.T, objs []*unstructured.Unstructured) {
			if len(ofKind(objs, "PodDisruptionBudget")) != 0 {
				t.Error("a PodDisruptionBudget with one replica blocks every node drain")
			}
		}},
		{"extra args are appended", "controller: {extraArgs: [--v=6]}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0]))
			if last := c.Args[len(c.Args)-1]; last != "--v=6" {
				t.Errorf("last argument = %q, want --v=6", last)
			}
		}},
		{"EC2 loop off by default", "", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0]))
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--aws") || strings.HasPrefix(a, "--eks-cluster") || strings.HasPrefix(a, "--region") {
					t.Errorf("argument %s without controller.aws.enabled", a)
				}
			}
		}},
		{"EC2 loop with IRSA", "controller: {aws: {enabled: true, eksCluster: prod, region: eu-west-1, interval: 10m}}\nserviceAccount: {annotations: {eks.amazonaws.com/role-arn: \"arn:aws:iam::111122223333:role/nodekeeper\"}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0]))
			for _, want := range []string{"--aws=true", "--eks-cluster=prod", "--region=eu-west-1", "--aws-interval=10m", "--register-grace=10m"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %q lack %s", c.Args, want)
				}
			}
			sa := mustTyped[*corev1.ServiceAccount](t, ofKind(objs, "ServiceAccount")[0])
			if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/nodekeeper" {
				t.Errorf("service account annotations %v", sa.Annotations)
			}
		}},
		{"existing service account, no RBAC", "serviceAccount: {create: false, name: existing}\nrbac: {create: false}", func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, k := range []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
				if n := len(ofKind(objs, k)); n != 0 {
					t.Errorf("%d %s rendered", n, k)
				}
			}
			d := mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])
			if d.Spec.Template.Spec.ServiceAccountName != "existing" {
				t.Errorf("serviceAccountName = %s", d.Spec.Template.Spec.ServiceAccountName)
			}
		}},
		{"dashboard in another namespace", "grafanaDashboard: {enabled: true, namespace: monitoring, labels: {grafana_dashboard: \"1\", team: x}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			cm := mustTyped[*corev1.ConfigMap](t, find(objs, "ConfigMap", "monitoring", "nodekeeper-dashboard"))
			if cm.Labels["grafana_dashboard"] != "1" || cm.Labels["team"] != "x" {
				t.Errorf("labels = %v", cm.Labels)
			}
			if cm.Data["nodekeeper.json"] != string(readRepoFile(t, "deploy/grafana/nodekeeper.json")) {
				t.Error("the dashboard ConfigMap does not carry deploy/grafana/nodekeeper.json")
			}
		}},
		{"extra volumes and mounts", "extraVolumes: [{name: ca, secret: {secretName: ca}}]\ncontroller: {extraVolumeMounts: [{name: ca, mountPath: /etc/ca, readOnly: true}]}", func(t *testing.T, objs []*unstructured.Unstructured) {
			d := mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])
			vols := d.Spec.Template.Spec.Volumes
			if len(vols) != 2 || vols[0].Name != "tmp" || vols[1].Name != "ca" || vols[1].Secret == nil || vols[1].Secret.SecretName != "ca" {
				t.Errorf("volumes = %+v, want tmp then the secret ca", vols)
			}
			mounts := controllerContainer(t, d).VolumeMounts
			if len(mounts) != 2 || !reflect.DeepEqual(mounts[1], corev1.VolumeMount{Name: "ca", MountPath: "/etc/ca", ReadOnly: true}) {
				t.Errorf("volume mounts = %+v, want /tmp then ca on /etc/ca", mounts)
			}
		}},
		{"leader election timings", "controller: {leaderElection: {enabled: true, id: x, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			args := controllerArgs(t, objs)
			for flag, want := range map[string]string{"leader-election-lease-duration": "30s", "leader-election-renew-deadline": "20s", "leader-election-retry-period": "4s"} {
				if args[flag] != want {
					t.Errorf("--%s=%s, want %s", flag, args[flag], want)
				}
			}
		}},
		{"service monitor relabelings", "metrics: {serviceMonitor: {enabled: true, relabelings: [{targetLabel: cluster, replacement: prod}], metricRelabelings: [{action: drop, sourceLabels: [__name__], regex: go_.*}]}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			eps, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor", ns, "nodekeeper").Object, "spec", "endpoints")
			if len(eps) != 1 {
				t.Fatalf("endpoints = %v", eps)
			}
			ep := eps[0].(map[string]any)
			want := map[string]any{
				"relabelings":       []any{map[string]any{"targetLabel": "cluster", "replacement": "prod"}},
				"metricRelabelings": []any{map[string]any{"action": "drop", "sourceLabels": []any{"__name__"}, "regex": "go_.*"}},
			}
			for k, v := range want {
				if !reflect.DeepEqual(ep[k], v) {
					t.Errorf("endpoint %s = %v, want %v", k, ep[k], v)
				}
			}
		}},
		// Issue 31 item 9: metrics are secure unless asked otherwise.
		{"plain metrics when asked, no NetworkPolicy unless asked", "metrics: {secure: false, serviceMonitor: {enabled: true}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			if args := controllerArgs(t, objs); args["metrics-secure"] != "false" || args["metrics-cert-dir"] != "" {
				t.Errorf("flags %v, want --metrics-secure=false", args)
			}
			if find(objs, "ClusterRole", "", "nodekeeper-metrics-reader") != nil || len(ofKind(objs, "NetworkPolicy")) != 0 {
				t.Error("metrics-reader ClusterRole or NetworkPolicy rendered with plain metrics")
			}
		}},
		{"secure metrics with the self-signed certificate by default", "metrics: {serviceMonitor: {enabled: true}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			args := controllerArgs(t, objs)
			if args["metrics-secure"] != "true" || args["metrics-cert-dir"] != "" {
				t.Errorf("flags %v, want --metrics-secure=true without --metrics-cert-dir", args)
			}
			eps, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor", ns, "nodekeeper").Object, "spec", "endpoints")
			if len(eps) != 1 || !reflect.DeepEqual(eps[0].(map[string]any)["tlsConfig"], map[string]any{"insecureSkipVerify": true}) {
				t.Errorf("endpoints = %v, want tlsConfig insecureSkipVerify for the self-signed certificate", eps)
			}
			reader := mustTyped[*rbacv1.ClusterRole](t, find(objs, "ClusterRole", "", "nodekeeper-metrics-reader"))
			if want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}; !reflect.DeepEqual(reader.Rules, want) {
				t.Errorf("metrics-reader rules = %+v, want %+v", reader.Rules, want)
			}
			auth := mustTyped[*rbacv1.ClusterRoleBinding](t, find(objs, "ClusterRoleBinding", "", "nodekeeper-metrics-auth"))
			if auth.RoleRef.Name != "nodekeeper-metrics-auth" || len(auth.Subjects) != 1 || auth.Subjects[0].Name != "nodekeeper" || auth.Subjects[0].Namespace != ns {
				t.Errorf("metrics-auth binding = %+v", auth)
			}
		}},
		{"secure metrics with a certificate Secret", "metrics: {secure: true, certSecret: metrics-tls}", func(t *testing.T, objs []*unstructured.Unstructured) {
			d := mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])
			dir := controllerArgs(t, objs)["metrics-cert-dir"]
			var mounted bool
			for _, m := range controllerContainer(t, d).VolumeMounts {
				mounted = mounted || m.Name == "metrics-certs" && m.MountPath == dir && m.ReadOnly
			}
			var volume bool
			for _, v := range d.Spec.Template.Spec.Volumes {
				volume = volume || v.Name == "metrics-certs" && v.Secret != nil && v.Secret.SecretName == "metrics-tls"
			}
			if dir == "" || !mounted || !volume {
				t.Errorf("--metrics-cert-dir=%q, mounted %v, Secret volume %v", dir, mounted, volume)
			}
		}},
		{"network policy", "networkPolicy: {enabled: true, metricsFrom: [{namespaceSelector: {matchLabels: {team: obs}}, podSelector: {}}]}", func(t *testing.T, objs []*unstructured.Unstructured) {
			np := mustTyped[*networkingv1.NetworkPolicy](t, find(objs, "NetworkPolicy", ns, "nodekeeper"))
			d := mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])
			if !selects(np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
				t.Errorf("pod selector %v does not select the controller pods", np.Spec.PodSelector)
			}
			if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
				t.Errorf("policy types %v, want Ingress only (the controller must reach the API server)", np.Spec.PolicyTypes)
			}
			if len(np.Spec.Ingress) != 2 {
				t.Fatalf("ingress rules = %+v, want metrics and probes", np.Spec.Ingress)
			}
			metrics, probes := np.Spec.Ingress[0], np.Spec.Ingress[1]
			if len(metrics.Ports) != 1 || metrics.Ports[0].Port.String() != "metrics" || len(metrics.From) != 1 ||
				!reflect.DeepEqual(metrics.From[0].NamespaceSelector.MatchLabels, map[string]string{"team": "obs"}) ||
				metrics.From[0].PodSelector == nil || len(metrics.From[0].PodSelector.MatchLabels) != 0 {
				t.Errorf("metrics rule = %+v, want the metrics port from namespaces labelled team=obs", metrics)
			}
			if len(probes.Ports) != 1 || probes.Ports[0].Port.String() != "health" || len(probes.From) != 0 {
				t.Errorf("probe rule = %+v, want the health port from anywhere", probes)
			}
		}},
		{"one replica without leader election", "replicaCount: 1\ncontroller: {leaderElection: {enabled: false, id: x}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			if args := controllerArgs(t, objs); args["leader-elect"] != "false" {
				t.Errorf("--leader-elect=%s", args["leader-elect"])
			}
		}},
		{"alert labels and disabled alerts", "metrics: {prometheusRule: {enabled: true, additionalRuleLabels: {team: x}, disabled: {NodekeeperErrors: true, NodekeeperDown: false}}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			groups, _, _ := unstructured.NestedSlice(find(objs, "PrometheusRule", ns, "nodekeeper").Object, "spec", "groups")
			var names []string
			for _, g := range groups {
				for _, r := range g.(map[string]any)["rules"].([]any) {
					rule := r.(map[string]any)
					names = append(names, rule["alert"].(string))
					if rule["labels"].(map[string]any)["team"] != "x" {
						t.Errorf("%s has labels %v", rule["alert"], rule["labels"])
					}
				}
			}
			if slices.Contains(names, "NodekeeperErrors") || !slices.Contains(names, "NodekeeperDown") {
				t.Errorf("alerts = %v", names)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, helmTemplate(t, "nodekeeper", ns, tc.values))
		})
	}
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(string(readRepoFile(t, chartDir+"/Chart.yaml")), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}

// Bad values fail at install time with a message that names the value, instead of rendering a
// controller that crash-loops on a bad flag.
func TestHelmRejectsBadValues(t *testing.T) {
	for _, tc := range []struct{ name, values, wantErr string }{
		{"grace period not a duration", "controller: {gracePeriod: one-hour}", "/controller/gracePeriod"},
		{"grace period without unit", "controller: {gracePeriod: \"3600\"}", "/controller/gracePeriod"},
		{"zero grace period", "controller: {gracePeriod: 0s}", "/controller/gracePeriod"},
		{"zero grace period, composite", "controller: {gracePeriod: 0h0m}", "/controller/gracePeriod"},
		{"zero replicas", "replicaCount: 0", "/replicaCount"},
		{"qps zero", "controller: {qps: 0}", "/controller/qps"},
		{"workers not a number", "controller: {workers: many}", "/controller/workers"},
		{"dry-run as string", "controller: {dryRun: \"yes\"}", "/controller/dryRun"},
		{"unknown top-level value", "gracePeriod: 1h", "additional properties 'gracePeriod' not allowed"},
		{"misspelt controller value", "controller: {gracePeriods: 1h}", "additional properties 'gracePeriods' not allowed"},
		{"bad digest", "image: {digest: latest}", "/image/digest"},
		{"bad leader-election id", "controller: {leaderElection: {enabled: true, id: Not_A_Name}}", "/controller/leaderElection/id"},
		{"extra arg not a flag", "controller: {extraArgs: [gc]}", "/controller/extraArgs/0"},
		{"service account name required", "serviceAccount: {create: false}", "serviceAccount.name is required"},
		{"unknown alert disabled", "metrics: {prometheusRule: {enabled: true, disabled: {NodekeeperTypo: true}}}", `no alert named "NodekeeperTypo"`},
		{"service monitor without service", "metrics: {service: {enabled: false}, serviceMonitor: {enabled: true}}", "needs metrics.service.enabled"},
		{"replicas without leader election", "controller: {leaderElection: {enabled: false, id: x}}", "replicaCount is 2 but controller.leaderElection.enabled is false"},
		{"three replicas without leader election", "replicaCount: 3\ncontroller: {leaderElection: {enabled: false, id: x}}", "replicaCount is 3 but controller.leaderElection.enabled is false"},
		{"lease duration not a duration", "controller: {leaderElection: {enabled: true, id: x, leaseDuration: fifteen}}", "/controller/leaderElection/leaseDuration"},
		{"zero retry period", "controller: {leaderElection: {enabled: true, id: x, retryPeriod: 0s}}", "/controller/leaderElection/retryPeriod"},
		{"relabeling with unknown field", "metrics: {serviceMonitor: {enabled: true, relabelings: [{target_label: cluster}]}}", "/metrics/serviceMonitor/relabelings/0"},
		{"certificate Secret without secure metrics", "metrics: {secure: false, certSecret: metrics-tls}", "metrics.certSecret needs metrics.secure"},
		{"network policy typo", "networkPolicy: {enabled: true, metricsNamespaceSelector: {}}", "additional properties 'metricsNamespaceSelector' not allowed"},
		{"network policy open to everyone", "networkPolicy: {enabled: true, metricsFrom: []}", "/networkPolicy/metricsFrom"},
		{"volume mount without path", "controller: {extraVolumeMounts: [{name: ca}]}", "/controller/extraVolumeMounts/0"},
		{"EC2 loop without a cluster", "controller: {aws: {enabled: true}}", "/controller/aws"},
		{"EC2 loop with an empty cluster", "controller: {aws: {enabled: true, eksCluster: \"\"}}", "/controller/aws/eksCluster"},
		{"EC2 loop interval zero", "controller: {aws: {enabled: true, eksCluster: prod, interval: 0s}}", "/controller/aws/interval"},
		{"EC2 loop register grace zero", "controller: {aws: {enabled: true, eksCluster: prod, registerGrace: 0m}}", "/controller/aws/registerGrace"},
		{"EC2 loop region typo", "controller: {aws: {enabled: true, eksCluster: prod, region: US-EAST-1}}", "/controller/aws/region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplateErr(t, "nodekeeper", "nodekeeper", tc.values)
			if err == nil {
				t.Fatalf("helm template succeeded:\n%.300s", out)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error does not mention %q:\n%v", tc.wantErr, err)
			}
		})
	}
}

// The kustomize base is the chart with its default values: same Deployment spec (image, flags,
// probes, resources, security, spreading), same Service ports and PodDisruptionBudget. Only the
// labels differ (the chart adds its release labels), so they are left out of the comparison.
func TestKustomizeMatchesHelmDefaults(t *testing.T) {
	kust := kustomize(t, "deploy/kustomize/base")
	hlm := helmTemplate(t, "nodekeeper", "nodekeeper", "")

	deploymentSpec := func(objs []*unstructured.Unstructured) appsv1.DeploymentSpec {
		d := mustTyped[*appsv1.Deployment](t, find(objs, "Deployment", "nodekeeper", "nodekeeper"))
		s := d.Spec
		s.Selector, s.Template.Labels = nil, nil
		for i := range s.Template.Spec.TopologySpreadConstraints {
			s.Template.Spec.TopologySpreadConstraints[i].LabelSelector = nil
		}
		if a := s.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm.LabelSelector = nil
			}
		}
		return s
	}
	if got, want := deploymentSpec(hlm), deploymentSpec(kust); !reflect.DeepEqual(got, want) {
		t.Errorf("Deployment specs differ:\n helm:      %+v\n kustomize: %+v", got, want)
	}
	// The monitoring overlay is the chart with its ServiceMonitor (secure metrics, the default of
	// both); the metrics-insecure overlay the chart with metrics.secure=false.
	secureHelm := helmTemplate(t, "nodekeeper", "nodekeeper", "metrics: {serviceMonitor: {enabled: true}}")
	secureKust := kustomize(t, "deploy/kustomize/overlays/monitoring")
	plainHelm := helmTemplate(t, "nodekeeper", "nodekeeper", "metrics: {secure: false, serviceMonitor: {enabled: true}}")
	plainKust := kustomize(t, "deploy/kustomize/overlays/metrics-insecure")
	if got, want := deploymentSpec(plainHelm), deploymentSpec(plainKust); !reflect.DeepEqual(got, want) {
		t.Errorf("plain metrics: Deployment specs differ:\n helm:      %+v\n kustomize: %+v", got, want)
	}
	// The aws overlay is the chart with controller.aws for its cluster and the IRSA annotation: the
	// same spec once the kubelet has expanded the cluster's name into the arguments (the chart
	// writes it there itself), and the same service account annotations.
	awsHelm := helmTemplate(t, "nodekeeper", "nodekeeper", `controller: {aws: {enabled: true, eksCluster: my-cluster}}
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/my-cluster-nodekeeper"}}`)
	awsKust := kustomize(t, "deploy/kustomize/overlays/aws")
	awsSpec := deploymentSpec(awsKust)
	c := &awsSpec.Template.Spec.Containers[0]
	c.Args = expandEnv(c.Args, c.Env)
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NODEKEEPER_EKS_CLUSTER" })
	if got, want := deploymentSpec(awsHelm), awsSpec; !reflect.DeepEqual(got, want) {
		t.Errorf("EC2 loop: Deployment specs differ:\n helm:      %+v\n kustomize: %+v", got, want)
	}
	// The checks overlay is the chart with checks.enabled.
	checksHelm := helmTemplate(t, "nodekeeper", "nodekeeper", "checks: {enabled: true}")
	if got, want := deploymentSpec(checksHelm), deploymentSpec(kustomize(t, "deploy/kustomize/overlays/checks")); !reflect.DeepEqual(got, want) {
		t.Errorf("checks: Deployment specs differ:\n helm:      %+v\n kustomize: %+v", got, want)
	}
	annotations := func(objs []*unstructured.Unstructured) map[string]string {
		return find(objs, "ServiceAccount", "nodekeeper", "nodekeeper").GetAnnotations()
	}
	if got, want := annotations(awsHelm), annotations(awsKust); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf("EC2 loop: service account annotations differ: helm %v, kustomize %v", got, want)
	}

	endpoints := func(objs []*unstructured.Unstructured) any {
		eps, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor", "nodekeeper", "nodekeeper").Object, "spec", "endpoints")
		return eps
	}
	if got, want := endpoints(secureHelm), endpoints(secureKust); !reflect.DeepEqual(got, want) {
		t.Errorf("secure metrics: ServiceMonitor endpoints differ:\n helm:      %v\n kustomize: %v", got, want)
	}
	if got, want := endpoints(plainHelm), endpoints(plainKust); !reflect.DeepEqual(got, want) {
		t.Errorf("plain metrics: ServiceMonitor endpoints differ:\n helm:      %v\n kustomize: %v", got, want)
	}

	svc := func(objs []*unstructured.Unstructured) []corev1.ServicePort {
		return mustTyped[*corev1.Service](t, find(objs, "Service", "nodekeeper", "nodekeeper-metrics")).Spec.Ports
	}
	if got, want := svc(hlm), svc(kust); !reflect.DeepEqual(got, want) {
		t.Errorf("Service ports differ: helm %+v, kustomize %+v", got, want)
	}
	pdb := func(objs []*unstructured.Unstructured) any {
		return mustTyped[*policyv1.PodDisruptionBudget](t, find(objs, "PodDisruptionBudget", "nodekeeper", "nodekeeper")).Spec.MinAvailable
	}
	if got, want := pdb(hlm), pdb(kust); !reflect.DeepEqual(got, want) {
		t.Errorf("PodDisruptionBudget minAvailable differs: helm %v, kustomize %v", got, want)
	}
}

// The aws component's placeholders fail loudly where an overlay leaves them: without the cluster's
// name the rendered arguments make the image's nodekeeper-controller refuse to start (naming the
// flag), and the IRSA annotation names a role of AWS's documentation account, which denies every
// scan (NodekeeperInstanceScansFailing).
func TestKustomizeAWSPlaceholders(t *testing.T) {
	const dir = "internal/test/deploytest/testdata/aws-component"
	trackInputs(t, dir)
	objs := kustomize(t, dir)
	sa := find(objs, "ServiceAccount", "nodekeeper", "nodekeeper")
	if got := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/nodekeeper" {
		t.Errorf("service account role-arn annotation %q, want the documentation account's placeholder", got)
	}
	args := controllerArgs(t, objs)
	if args["aws"] != "true" || args["eks-cluster"] != "" {
		t.Fatalf("--aws=%q --eks-cluster=%q, want the EC2 loop on with an empty cluster name", args["aws"], args["eks-cluster"])
	}
	c := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0]))
	// A kubeconfig that does not exist: should validation pass, the run fails at once instead of
	// looking for a cluster.
	rendered := append([]string{"--kubeconfig=" + filepath.Join(t.TempDir(), "none")}, expandEnv(c.Args, c.Env)...)
	var out bytes.Buffer
	root := command.NewRoot(strings.NewReader(""), &out, &out)
	root.SetArgs(rendered)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "--aws needs --eks-cluster") {
		t.Errorf("nodekeeper-controller %q: error %v, want one naming --eks-cluster\n%s", rendered, err, out.String())
	}
}

// The check loop's RBAC stays least-privilege in every rendering: no rule ever grants nodes/proxy
// (it reaches every kubelet's whole API and authorizes exec) or a wildcard resource; nodes/configz
// is granted only with checks.kubeletConfig (and --checks-kubelet-config passed with it);
// pods/proxy only in kube-system, where the aws-node pods run, through a Role.
func TestChecksRBACLeastPrivilege(t *testing.T) {
	type rendered struct {
		name          string
		objs          []*unstructured.Unstructured
		configz       bool // nodes/configz expected
		podsProxyRole bool // the kube-system Role with pods/proxy expected
	}
	cases := []rendered{
		{"helm-defaults", helmTemplate(t, "nodekeeper", "nodekeeper", ""), false, false},
		{"helm-checks", helmTemplate(t, "nodekeeper", "nodekeeper", "checks: {enabled: true}"), false, true},
		{"helm-checks-kubelet-config", helmTemplate(t, "nodekeeper", "nodekeeper", "checks: {enabled: true, kubeletConfig: true}"), true, true},
		{"helm-kubelet-config-without-checks", helmTemplate(t, "nodekeeper", "nodekeeper", "checks: {enabled: false, kubeletConfig: true}"), false, false},
		{"helm-full-checks", helmTemplate(t, "nk", "nk-helm", fullValues+"checks: {enabled: true, kubeletConfig: true}\n"), true, true},
		{"kustomize-checks", kustomize(t, "deploy/kustomize/overlays/checks"), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var configz, podsProxy bool
			check := func(where string, rules []rbacv1.PolicyRule, namespace string) {
				for _, r := range rules {
					for _, res := range r.Resources {
						switch {
						case res == "nodes/proxy" || res == "*" || res == "nodes/*" || res == "*/proxy":
							t.Errorf("%s grants %s (verbs %v)", where, res, r.Verbs)
						case res == "nodes/configz":
							configz = true
						case res == "pods/proxy":
							podsProxy = true
							if namespace != "kube-system" {
								t.Errorf("%s grants pods/proxy outside kube-system", where)
							}
						}
					}
				}
			}
			for _, u := range tc.objs {
				switch u.GetKind() {
				case "ClusterRole":
					check("ClusterRole "+u.GetName(), mustTyped[*rbacv1.ClusterRole](t, u).Rules, "")
				case "Role":
					check("Role "+u.GetNamespace()+"/"+u.GetName(), mustTyped[*rbacv1.Role](t, u).Rules, u.GetNamespace())
				}
			}
			if configz != tc.configz {
				t.Errorf("nodes/configz granted: %v, want %v", configz, tc.configz)
			}
			if podsProxy != tc.podsProxyRole {
				t.Errorf("pods/proxy granted: %v, want %v", podsProxy, tc.podsProxyRole)
			}
			args := controllerArgs(t, tc.objs)
			if _, on := args["checks-kubelet-config"]; on != tc.configz {
				t.Errorf("--checks-kubelet-config passed: %v, want %v (with nodes/configz)", on, tc.configz)
			}
		})
	}
}
