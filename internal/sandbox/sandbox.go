// Package sandbox runs the whole product's playground: a real local control plane (internal/controlplane)
// with simulated EKS kubelets (internal/kubeletsim) in a chosen mix of healthy nodes, stopped
// machines, zombie kubelets and leases leaked in the past, so that every nodekeeper command has
// something true to find without a cloud account.
package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/controlplane"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// Mix says how many simulated nodes of each kind to start.
type Mix struct {
	// Healthy modern kubelets that heartbeat normally.
	Healthy int
	// Stopped machines: the Node stays, its lease stops being renewed (class stale).
	Stopped int
	// LegacyZombies are pre-1.29 kubelets whose Node was deleted while they run: they re-create an
	// ownerless lease and keep renewing it (class zombie: a kubelet that outlived its Node).
	LegacyZombies int
	// ModernZombies are 1.29+ kubelets whose Node was deleted while they run: the garbage
	// collector removes the lease and the kubelet keeps GETting lease and Node every 10 s.
	ModernZombies int
	// Leaked leases left behind by legacy kubelets whose machines died long ago (class leaked).
	Leaked int
	// LeakedAge is how long ago the leaked leases were last renewed.
	LeakedAge time.Duration
	// LeaseDurationSeconds for every simulated kubelet (default 40, the kubelet's).
	LeaseDurationSeconds int32
}

// DefaultMix is a small cluster with a little of everything.
func DefaultMix() Mix {
	return Mix{Healthy: 20, Stopped: 1, LegacyZombies: 2, ModernZombies: 1, Leaked: 5, LeakedAge: 6 * time.Hour}
}

// Sandbox is a running control plane with its simulated kubelets.
type Sandbox struct {
	Env   *controlplane.Env
	Fleet *kubeletsim.Fleet
}

// AuditPolicy records who touched leases and nodes (with the object on lease writes, so the audit
// command can see missing owner references) and metadata for everything else.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  verbs: ["create", "update", "patch"]
- level: Metadata
`

// Options are how the sandbox runs, beside what it holds (Mix).
type Options struct {
	// ControlPlaneDir holds etcd, kube-apiserver and kube-controller-manager; "" lets
	// controlplane.BinDir search for them.
	ControlPlaneDir string
	// Quiet silences the simulated kubelets' own logs.
	Quiet bool
	// Progress receives one line per step; nil for none.
	Progress func(string)
	// UserAgent names the sandbox's own requests (arranging the mix) in the audit log; "" is
	// "nodekeeper-sandbox". Without one, client-go's default says "kubernetes/$Format" for a
	// binary built without Kubernetes' version stamp.
	UserAgent string
}

// Start brings up the control plane and the simulated kubelets, then arranges the mix.
func Start(ctx context.Context, mix Mix, opts Options) (_ *Sandbox, err error) {
	quiet, progress := opts.Quiet, opts.Progress
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	if mix.LeaseDurationSeconds == 0 {
		mix.LeaseDurationSeconds = 40
	}
	start := time.Now()
	say("starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1")
	// The controller manager runs with leader election, as on every real cluster: its lock in
	// kube-system is the sandbox's leader-election lease.
	env, err := controlplane.Start(ctx, controlplane.Options{ControllerManager: true, ControllerManagerArgs: []string{"--leader-elect=true"},
		AuditPolicy: AuditPolicy, BinDir: opts.ControlPlaneDir})
	if err != nil {
		return nil, err
	}
	if quiet {
		// The simulated kubelets log like real ones (every failed owner-reference GET of a zombie);
		// in the sandbox that is noise on the user's terminal.
		ctx = klog.NewContext(ctx, logr.Discard())
	}
	fleet := kubeletsim.NewFleet(func(node string) *rest.Config { return env.UserConfig("system:node:"+node, "system:nodes") })
	sb := &Sandbox{Env: env, Fleet: fleet}
	defer func() {
		if err != nil {
			sb.Stop()
		}
	}()
	say("control plane ready in %s at %s", time.Since(start).Round(100*time.Millisecond), env.APIServerURL())
	ua := opts.UserAgent
	if ua == "" {
		ua = "nodekeeper-sandbox"
	}
	adminCfg := env.AdminConfig()
	adminCfg.UserAgent = ua
	admin, err := kubeletsim.NewClient(adminCfg, nil)
	if err != nil {
		return nil, err
	}
	versions, err := discovery.NewDiscoveryClientForConfig(adminCfg)
	if err != nil {
		return nil, err
	}
	modernVersion, err := kubeletVersionFor(versions)
	if err != nil {
		return nil, err
	}

	maxPods, err := kubeletsim.MaxPods(kubeletsim.DefaultInstanceType)
	if err != nil {
		return nil, err
	}
	var cfgs []kubeletsim.Config
	index := 0
	add := func(n int, mode kubeletsim.Mode) []int {
		var idx []int
		for range n {
			idx = append(idx, len(cfgs))
			cfg := kubeletsim.Config{Name: kubeletsim.NodeName(index), Mode: mode, LeaseDurationSeconds: mix.LeaseDurationSeconds}
			if mode == kubeletsim.Modern {
				cfg.KubeletVersion = modernVersion
			}
			// A node group tuned as doctor recommends (NK201): the pull burst holds a full
			// node's pods, so a scale-up's pulls are not refused. The sandbox plants lease
			// problems, not kubelet settings.
			cfg.RegistryPullQPS, cfg.RegistryBurst = tunedPullQPS, maxPods
			cfgs = append(cfgs, cfg)
			index++
		}
		return idx
	}
	add(mix.Healthy, kubeletsim.Modern)
	stopped := add(mix.Stopped, kubeletsim.Modern)
	legacy := add(mix.LegacyZombies, kubeletsim.Legacy)
	modern := add(mix.ModernZombies, kubeletsim.Modern)
	say("registering %d simulated kubelets", len(cfgs))
	kubelets, err := fleet.StartAll(ctx, cfgs, 16)
	if err != nil {
		return nil, fmt.Errorf("start simulated kubelets: %w", err)
	}
	// Every kubelet serves its /configz through the API server's node proxy, answered in this
	// process (controlplane.ServeNode): nothing is sent to the Nodes' 10.x addresses.
	for _, k := range kubelets {
		if err := env.ServeNode(k.Address(), k.KubeletAPI()); err != nil {
			return nil, fmt.Errorf("serve the kubelet API of %s: %w", k.Name(), err)
		}
	}
	// Every kubelet holds an owned lease before the mix is arranged, as on a cluster that has run
	// for a while; only then do machines die and Nodes get deleted.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, k := range kubelets {
			l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.Name(), metav1.GetOptions{})
			if err != nil || len(l.OwnerReferences) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("simulated kubelets did not all create their leases: %w", err)
	}
	for _, i := range stopped {
		if err := stopMachine(ctx, env, admin, kubelets[i], time.Now().Add(-StoppedAgo)); err != nil {
			return nil, err
		}
	}
	if len(stopped) > 0 {
		say("stopped %d machine(s) %s ago: their Nodes stay, NotReady, their leases stale", len(stopped), shortDuration(StoppedAgo))
	}
	zombies := append(append([]int{}, legacy...), modern...)
	for _, i := range zombies {
		if err := admin.CoreV1().Nodes().Delete(ctx, kubelets[i].Name(), metav1.DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("delete node %s: %w", kubelets[i].Name(), err)
		}
	}
	if len(zombies) > 0 {
		say("deleted the Nodes of %d running kubelet(s) (%d legacy, %d modern): zombies", len(zombies), len(legacy), len(modern))
	}
	for i := range mix.Leaked {
		name := kubeletsim.NodeName(index + i)
		if _, err := kubeletsim.SeedOldLeakedLease(ctx, admin, env, name, time.Now().Add(-mix.LeakedAge)); err != nil {
			return nil, fmt.Errorf("seed leaked lease %s: %w", name, err)
		}
	}
	if mix.Leaked > 0 {
		say("seeded %d ownerless leases left by machines that died %s ago: leaked", mix.Leaked, shortDuration(mix.LeakedAge))
	}
	// The legacy zombies' leases come back once the garbage collector has removed the originals
	// and each kubelet has renewed; wait for that so the first report already shows them.
	if len(legacy) > 0 {
		say("waiting for the garbage collector and the legacy kubelets to re-create their leases")
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, i := range legacy {
				l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, kubelets[i].Name(), metav1.GetOptions{})
				if err != nil || len(l.OwnerReferences) > 0 {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			klog.InfoS("legacy zombie leases not re-created yet; they will appear shortly", "err", err)
		}
	}
	say("ready in %s", time.Since(start).Round(100*time.Millisecond))
	return sb, nil
}

// StoppedAgo is how long ago the sandbox's stopped machines died: their leases were last renewed
// then, so the first report already shows them stale.
const StoppedAgo = 5 * time.Minute

// PlantedModernSuffix ends the version of the sandbox's modern kubelets: the API server's own
// version with an EKS build suffix, as EKS kubelets report theirs.
const PlantedModernSuffix = "-eks-5e0fdde"

// tunedPullQPS is the registryPullQPS of the sandbox's kubelets: the value doctor's NK201
// recommends (rules.RecommendedRegistryPullQPS).
const tunedPullQPS = 50

// kubeletVersionFor is the version the modern simulated kubelets report: the API server's own
// (major.minor.patch), so that they run within the supported skew of whatever control plane the
// sandbox was given, as the kubelets of a healthy EKS node group do.
func kubeletVersionFor(c discovery.ServerVersionInterface) (string, error) {
	sv, err := c.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("read the API server's version: %w", err)
	}
	v, err := version.ParseGeneric(sv.GitVersion)
	if err != nil {
		return "", fmt.Errorf("the API server's version %q: %w", sv.GitVersion, err)
	}
	return fmt.Sprintf("v%d.%d.%d%s", v.Major(), v.Minor(), v.Patch(), PlantedModernSuffix), nil
}

// stopMachine stops k's machine as if it had died at died: the kubelet stops, its address stops
// answering, its lease is left with that last renewal, and its Node carries what the node
// lifecycle controller writes once the grace period has passed (Ready Unknown, "Kubelet stopped
// posting node status."). The sandbox writes that history at once instead of waiting the
// controller's grace period, so that the first report shows a stale machine.
func stopMachine(ctx context.Context, env *controlplane.Env, admin kubeletsim.Client, k *kubeletsim.Kubelet, died time.Time) error {
	k.Stop()
	env.NodeDown(k.Address())
	l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.Name(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("stopped machine %s: %w", k.Name(), err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: died}
	if _, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{FieldManager: "nodekeeper-sandbox"}); err != nil {
		return fmt.Errorf("stopped machine %s: backdate its lease: %w", k.Name(), err)
	}
	node, err := admin.CoreV1().Nodes().Get(ctx, k.Name(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("stopped machine %s: %w", k.Name(), err)
	}
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		c.Status, c.Reason, c.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
		c.LastTransitionTime = metav1.NewTime(died.Add(50 * time.Second))
	}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{FieldManager: "nodekeeper-sandbox"}); err != nil {
		return fmt.Errorf("stopped machine %s: mark its Node NotReady: %w", k.Name(), err)
	}
	return nil
}

// shortDuration prints d as a flag takes it: "6h", "5m", "1h30m", not Go's "6h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Stop stops every simulated kubelet and the control plane.
func (s *Sandbox) Stop() {
	if s.Fleet != nil {
		s.Fleet.StopAll()
	}
	if s.Env != nil {
		s.Env.Stop()
	}
}
