package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/controller"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// controllerOptions are the settings of `nodekeeper controller`.
type controllerOptions struct {
	g *globalOptions

	controller    controller.Options
	client        *kube.Options
	metricsAddr   string
	probeAddr     string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func newControllerCommand(g *globalOptions) *cobra.Command {
	o := &controllerOptions{g: g, client: kube.NewOptions(g.kube, "controller", controller.DefaultRateLimit)}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the in-cluster controller that deletes leaked node leases and reports zombie kubelets",
		Long: `Runs the nodekeeper controller. It watches leases in kube-node-lease and Nodes (metadata
only), classifies every lease, and:
  - deletes leases that are leaked (no Node, no owner, not renewed for --grace-period), only after a
    live GET of the Node returns NotFound, with UID and resourceVersion preconditions;
  - adopts unowned leases whose Node exists (adds the ownerReference) so the garbage collector
    removes them with their Node;
  - reports zombie kubelets (a lease renewed without a Node) with a Warning event and a metric,
    and never deletes their lease while it is renewed.
Run it with the RBAC in deploy/; it checks its permissions at start-up and names any that is missing.`,
		Example: `  # in a cluster (see deploy/): nodekeeper controller --grace-period=1h
  # locally, reporting only:
  nodekeeper controller --kubeconfig ~/.kube/config --leader-elect=false --dry-run`,
		Args: usageArgs(cobra.NoArgs),
		RunE: runOptions(o),
	}
	o.AddFlags(cmd.Flags())
	g.addKubeFlags(cmd)
	return cmd
}

func (o *controllerOptions) AddFlags(f *pflag.FlagSet) {
	opts := &o.controller
	f.DurationVar(&opts.GracePeriod, "grace-period", lease.DefaultGracePeriod,
		"how long an ownerless lease without a Node must go unrenewed before it is deleted")
	f.BoolVar(&opts.DryRun, "dry-run", false, "decide, log, count and emit events, but send no DELETE and no PATCH")
	o.client.AddRateLimitFlags(f) // lease and Node requests; leader election and events have their own
	f.IntVar(&opts.Workers, "workers", controller.DefaultWorkers, "leases processed in parallel")
	f.DurationVar(&opts.AdoptAfter, "adopt-after", controller.DefaultAdoptAfter,
		"leave a new unowned lease to its kubelet this long before adopting it")
	f.DurationVar(&opts.ZombieReportAfter, "zombie-report-after", controller.DefaultZombieReportAfter,
		"report a lease renewed without a Node only once it is this old (a starting kubelet registers its Node first)")
	f.BoolVar(&opts.LeaderElection.Enabled, "leader-elect", true, "elect one active replica through a Lease in --leader-election-namespace")
	f.StringVar(&opts.LeaderElection.Namespace, "leader-election-namespace", controller.DefaultElectionNamespaceFromEnv(),
		"namespace of the leader election Lease (default: $POD_NAMESPACE, else \"nodekeeper\")")
	f.StringVar(&opts.LeaderElection.Name, "leader-election-id", controller.DefaultElectionID, "name of the leader election Lease")
	f.DurationVar(&o.leaseDuration, "leader-election-lease-duration", controller.DefaultLeaseDuration, "how long a standby waits before taking over an unrenewed leadership")
	f.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", controller.DefaultRenewDeadline, "how long the leader keeps retrying a renewal before it stops acting")
	f.DurationVar(&o.retryPeriod, "leader-election-retry-period", controller.DefaultRetryPeriod, "interval between leader election attempts")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (\"0\" disables it)")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints (\"0\" disables it)")
}

// Complete sets the leader election timings.
func (o *controllerOptions) Complete(*cobra.Command, []string) error {
	le := &o.controller.LeaderElection
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = o.leaseDuration, o.renewDeadline, o.retryPeriod
	return nil
}

// Validate refuses settings that cannot work, with exit code 2.
func (o *controllerOptions) Validate() error {
	if err := o.client.Validate(); err != nil {
		return err
	}
	if o.controller.GracePeriod <= 0 {
		return fmt.Errorf("--grace-period must be positive, got %s", o.controller.GracePeriod)
	}
	return nil
}

// Run runs the controller, its metrics and its probes until ctx ends.
func (o *controllerOptions) Run(ctx context.Context) error {
	cfg, err := o.client.RESTConfig()
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background().WithName("controller"))
	c, err := controller.NewForConfig(cfg, o.controller)
	if err != nil {
		return withExitCode(2, err)
	}
	stopMetrics, err := controller.Serve(ctx, "metrics", o.metricsAddr, c.MetricsHandler())
	if err != nil {
		return err
	}
	stopProbes, err := controller.Serve(ctx, "health probes", o.probeAddr, c.ProbeHandler())
	if err != nil {
		return errors.Join(err, stopMetrics())
	}
	runErr := c.Run(ctx)
	shutdownErr := errors.Join(stopMetrics(), stopProbes())
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	klog.InfoS("Controller stopped")
	return shutdownErr
}
