package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/controller"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

func init() { rootCmd.AddCommand(newControllerCmd()) }

func newControllerCmd() *cobra.Command {
	var (
		opts          controller.Options
		qps           float32
		burst         int
		metricsAddr   string
		probeAddr     string
		leaseDuration time.Duration
		renewDeadline time.Duration
		retryPeriod   time.Duration
	)
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if qps < 0 || burst < 0 {
				return withExitCode(2, errors.New("--qps and --burst must not be negative"))
			}
			if opts.GracePeriod <= 0 {
				return withExitCode(2, fmt.Errorf("--grace-period must be positive, got %s", opts.GracePeriod))
			}
			cfg, err := kubeFlags.ToRESTConfig()
			if err != nil {
				return err
			}
			cfg = rest.CopyConfig(cfg)
			cfg.QPS, cfg.Burst = qps, burst
			if qps == 0 {
				cfg.QPS = -1 // client-go reads 0 as its default of 5; nodekeeper reads it as "no limit"
			}
			cfg.UserAgent = "nodekeeper-controller/" + version
			le := &opts.LeaderElection
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = leaseDuration, renewDeadline, retryPeriod
			// Leader election gets its own client configuration (and rate limit): a backlog of
			// lease work must never delay a leadership renewal.
			le.Config = rest.CopyConfig(cfg)
			le.Config.QPS, le.Config.Burst = 5, 10
			le.Config.UserAgent = "nodekeeper-controller-leader-election/" + version

			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("controller"))
			c, err := controller.New(cfg, opts)
			if err != nil {
				return withExitCode(2, err)
			}
			stopMetrics, err := controller.Serve(ctx, "metrics", metricsAddr, c.MetricsHandler())
			if err != nil {
				return err
			}
			stopProbes, err := controller.Serve(ctx, "health probes", probeAddr, c.ProbeHandler())
			if err != nil {
				return errors.Join(err, stopMetrics())
			}
			runErr := c.Run(ctx)
			stop()
			shutdownErr := errors.Join(stopMetrics(), stopProbes())
			if runErr != nil && !errors.Is(runErr, context.Canceled) {
				return runErr
			}
			klog.InfoS("Controller stopped")
			return shutdownErr
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.GracePeriod, "grace-period", lease.DefaultGracePeriod,
		"how long an ownerless lease without a Node must go unrenewed before it is deleted")
	f.BoolVar(&opts.DryRun, "dry-run", false, "decide, log, count and emit events, but send no DELETE and no PATCH")
	f.Float32Var(&qps, "qps", 20, "client-side rate limit for lease and Node requests per second (0: none)")
	f.IntVar(&burst, "burst", 50, "client-side burst for lease and Node requests")
	f.IntVar(&opts.Workers, "workers", controller.DefaultWorkers, "leases processed in parallel")
	f.DurationVar(&opts.AdoptAfter, "adopt-after", controller.DefaultAdoptAfter,
		"leave a new unowned lease to its kubelet this long before adopting it")
	f.DurationVar(&opts.ZombieReportAfter, "zombie-report-after", controller.DefaultZombieReportAfter,
		"report a lease renewed without a Node only once it is this old (a starting kubelet registers its Node first)")
	f.BoolVar(&opts.LeaderElection.Enabled, "leader-elect", true, "elect one active replica through a Lease in --leader-election-namespace")
	f.StringVar(&opts.LeaderElection.Namespace, "leader-election-namespace", controller.DefaultElectionNamespaceFromEnv(),
		"namespace of the leader election Lease (default: $POD_NAMESPACE, else \"nodekeeper\")")
	f.StringVar(&opts.LeaderElection.Name, "leader-election-id", controller.DefaultElectionID, "name of the leader election Lease")
	f.DurationVar(&leaseDuration, "leader-election-lease-duration", controller.DefaultLeaseDuration, "how long a standby waits before taking over an unrenewed leadership")
	f.DurationVar(&renewDeadline, "leader-election-renew-deadline", controller.DefaultRenewDeadline, "how long the leader keeps retrying a renewal before it stops acting")
	f.DurationVar(&retryPeriod, "leader-election-retry-period", controller.DefaultRetryPeriod, "interval between leader election attempts")
	f.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (\"0\" disables it)")
	f.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints (\"0\" disables it)")
	return cmd
}
