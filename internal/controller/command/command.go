// Package command is the controller's command line: its flags, their validation and the run of
// the controller with its metrics and probe endpoints. Both binaries build it: the controller's
// own (cmd/nodekeeper-controller, what the image runs) as its root command, and the CLI as
// `nodekeeper controller`, for running out of the cluster. It imports the controller, the client
// flags and the shared command plumbing, and nothing of the CLI's other commands.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/controller"
	"github.com/nodekeeper/nodekeeper/internal/controller/checks"
	"github.com/nodekeeper/nodekeeper/internal/controller/ec2loop"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// controllerOptions are the settings of the controller.
type controllerOptions struct {
	controller    controller.Options
	client        *kube.Options
	metricsAddr   string
	metricsCerts  string
	probeAddr     string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	aws           awsOptions
	checks        checksOptions
	changed       func(flag string) bool // set by Complete
}

// awsOptions are the EC2 loop's settings (--aws, opt-in and read-only).
type awsOptions struct {
	enabled bool
	region  string
	loop    ec2loop.Options
}

// checksOptions are the check loop's settings (--checks, opt-in and read-only).
type checksOptions struct {
	enabled       bool
	kubeletConfig bool
	loop          checks.Options
}

// New returns the controller's command, reading its connection flags from connection: the
// CLI passes its kubectl connection flags (registered by itself, with their completion), the
// controller's binary kube.ConnectionFlags. invocation is how a user runs it: "nodekeeper
// controller" in the CLI, "nodekeeper-controller" for the controller's binary.
func New(invocation string, connection kube.ConfigSource) *cobra.Command {
	words := strings.Fields(invocation)
	o := newOptions(connection)
	cmd := &cobra.Command{
		Use:   words[len(words)-1],
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
		Example: fmt.Sprintf(`  # in a cluster (see deploy/): %[1]s --grace-period=1h
  # locally, reporting only:
  %[1]s --kubeconfig ~/.kube/config --leader-elect=false --dry-run`, invocation),
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func newOptions(connection kube.ConfigSource) *controllerOptions {
	return &controllerOptions{client: kube.NewOptions(connection, "controller", controller.DefaultRateLimit)}
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
	f.BoolVar(&o.controller.SecureMetrics, "metrics-secure", true,
		"serve /metrics over HTTPS, each request authenticated (TokenReview) and authorized (SubjectAccessReview: get on the non-resource URL /metrics); needs create on tokenreviews and subjectaccessreviews. --metrics-secure=false serves plain HTTP to anyone who reaches the port: only for scrapers that cannot authenticate, behind a NetworkPolicy (docs/install.md)")
	f.StringVar(&o.metricsCerts, "metrics-cert-dir", "",
		"with --metrics-secure: directory holding tls.crt and tls.key of the metrics server (re-read when they change; default: a self-signed certificate made at start-up)")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints (\"0\" disables it)")
	a := &o.aws
	f.BoolVar(&a.enabled, "aws", false,
		"also compare, every --aws-interval, the running EC2 instances tagged for --eks-cluster with the Nodes' providerIDs, and report instances without a Node (metric nodekeeper_instances_without_node, Warning Event InstanceWithoutNode); read-only, needs ec2:DescribeInstances (docs/aws.md)")
	f.StringVar(&a.loop.Cluster, "eks-cluster", "", "with --aws: the EKS cluster's name, which its instances are tagged with")
	f.StringVar(&a.region, "region", "", "with --aws: the AWS region (default: the AWS configuration's, such as AWS_REGION)")
	f.DurationVar(&a.loop.Interval, "aws-interval", ec2loop.DefaultInterval, "with --aws: time between two EC2 scans")
	f.DurationVar(&a.loop.RegisterGrace, "register-grace", ec2loop.DefaultRegisterGrace,
		"with --aws: an instance launched less than this ago may still be registering its Node and is not reported")
	c := &o.checks
	f.BoolVar(&c.enabled, "checks", false,
		"on the leader, every --checks-interval, run doctor's cluster checks (with --aws its EC2 ones), measure the cause of the pods stuck on each node and compute plan's headroom per node group; export them as metrics (nodekeeper_findings, nodekeeper_pods_stuck, nodekeeper_scaleup_headroom_nodes) and Warning Events (PodsStuck on the Node, AWSNodeFinding on the aws-node DaemonSet); read-only, needs the permissions listed in docs/install.md")
	f.DurationVar(&c.loop.Interval, "checks-interval", checks.DefaultInterval, "with --checks: time between two check runs")
	f.BoolVar(&c.kubeletConfig, "checks-kubelet-config", false,
		"with --checks: read each Ready node's kubelet configuration straight from its kubelet (GET https://NODE:PORT/configz with the controller's token, the kubelet's certificate verified against the cluster's CA) for doctor's kubelet checks; needs get on nodes/configz and fine-grained kubelet authorization (Kubernetes 1.33+), never nodes/proxy. Without it the kubelet-configuration checks are reported skipped")
	f.IntVar(&c.loop.HeadroomAlert, "checks-headroom-alert", checks.DefaultHeadroomAlert,
		"with --checks: the headroom in nodes below which the alert NodekeeperScaleUpHeadroomLow fires (exported as nodekeeper_scaleup_headroom_threshold_nodes)")
}

// Complete sets the leader election timings and notes which flags were given.
func (o *controllerOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.changed = cmd.Flags().Changed
	le := &o.controller.LeaderElection
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = o.leaseDuration, o.renewDeadline, o.retryPeriod
	return nil
}

// Validate refuses settings that cannot work, with exit code 2.
func (o *controllerOptions) Validate() error {
	if err := o.client.Validate(); err != nil {
		return err
	}
	if o.metricsCerts != "" && !o.controller.SecureMetrics {
		return fmt.Errorf("--metrics-cert-dir needs --metrics-secure")
	}
	if o.controller.GracePeriod <= 0 {
		return fmt.Errorf("--grace-period must be positive, got %s", o.controller.GracePeriod)
	}
	if err := o.aws.validate(o.changed); err != nil {
		return err
	}
	if !o.checks.enabled {
		return cli.FlagsNeed(o.changed, "checks", "checks-interval", "checks-headroom-alert", "checks-kubelet-config")
	}
	if o.checks.loop.Interval <= 0 || o.checks.loop.HeadroomAlert <= 0 {
		return fmt.Errorf("--checks-interval and --checks-headroom-alert must be positive, got %s and %d", o.checks.loop.Interval, o.checks.loop.HeadroomAlert)
	}
	return nil
}

// validate refuses the EC2 loop's flags without --aws, and --aws without a cluster name.
func (a *awsOptions) validate(changed func(string) bool) error {
	if !a.enabled {
		return cli.FlagsNeed(changed, "aws", "eks-cluster", "region", "aws-interval", "register-grace")
	}
	if strings.TrimSpace(a.loop.Cluster) == "" {
		return errors.New("--aws needs --eks-cluster: the EKS cluster's name, which its instances are tagged with")
	}
	if a.loop.Interval <= 0 || a.loop.RegisterGrace <= 0 {
		// Zero would read as "the default" to the loop: refuse it rather than change it quietly.
		return fmt.Errorf("--aws-interval and --register-grace must be positive, got %s and %s", a.loop.Interval, a.loop.RegisterGrace)
	}
	return nil
}

// controllerShutdownGrace is how long the controller may take to stop after the first signal.
const controllerShutdownGrace = 15 * time.Second

// Run runs the controller, its metrics and its probes until ctx ends.
func (o *controllerOptions) Run(ctx context.Context) error {
	// On the first signal the leader gives up its lease and the endpoints shut down: within the
	// pod's termination grace (30 s by default), not cli's 2 s.
	cli.SetShutdownGrace(ctx, controllerShutdownGrace)
	if o.metricsAddr == "0" {
		o.controller.SecureMetrics = false // no endpoint: nothing to secure, no review permissions
	}
	cfg, err := o.client.RESTConfig()
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.Background().WithName("controller"))
	c, err := controller.NewForConfig(cfg, o.controller)
	if err != nil {
		return cli.WithExitCode(cli.ExitUsage, err)
	}
	metrics, serveOpts := c.MetricsHandler(), controller.ServeOptions{}
	if o.controller.SecureMetrics {
		if serveOpts.TLS, err = controller.MetricsTLS(o.metricsCerts); err != nil {
			return err
		}
		auth, err := controller.NewMetricsAuthForConfig(cfg)
		if err != nil {
			return err
		}
		metrics = auth.Wrap(metrics)
	}
	stopMetrics, err := controller.ServeWith(ctx, "metrics", o.metricsAddr, metrics, serveOpts)
	if err != nil {
		return err
	}
	stopProbes, err := controller.Serve(ctx, "health probes", o.probeAddr, c.ProbeHandler())
	if err != nil {
		return errors.Join(err, stopMetrics())
	}
	var loop *ec2loop.Loop
	if o.aws.enabled {
		// The EC2 loop runs beside the lease work and shares nothing it could block on: its
		// own goroutine, Kubernetes client, rate limit and deadlines.
		if loop, err = o.aws.newLoop(ctx, cfg, c); err != nil {
			return errors.Join(err, stopMetrics(), stopProbes())
		}
	}
	var checkLoop *checks.Loop
	if o.checks.enabled {
		// The check loop runs beside the lease work as the EC2 loop does: a slow check never
		// holds a lease decision.
		if checkLoop, err = o.newChecks(ctx, cfg, c); err != nil {
			return errors.Join(err, stopMetrics(), stopProbes())
		}
	}
	runErr := checks.RunBeside(ctx, checkLoop, func(ctx context.Context) error { return ec2loop.RunBeside(ctx, loop, c.Run) })
	shutdownErr := errors.Join(stopMetrics(), stopProbes())
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	klog.InfoS("Controller stopped")
	return shutdownErr
}

// newLoop builds the EC2 loop with an EC2 client from the SDK's default chain, its metrics in
// the controller's registry and its Events recorded by the leader only.
func (a *awsOptions) newLoop(ctx context.Context, cfg *rest.Config, c *controller.Controller) (*ec2loop.Loop, error) {
	api, err := ec2loop.LoadEC2(ctx, a.region)
	if err != nil {
		return nil, err
	}
	deps, err := ec2loop.NewDeps(cfg, api, c.Leading)
	if err != nil {
		return nil, err
	}
	opts := a.loop
	opts.Registry = c.Registry()
	return ec2loop.New(deps, opts)
}

// The check loop's EC2 checks take the client the EC2 loop is loaded with.
var _ nkaws.EC2API = ec2loop.EC2{}

// newChecks builds the check loop, its metrics in the controller's registry and its Events
// recorded by the leader only; with --aws its EC2 client adds doctor's EC2 checks and plan's
// subnet limit.
func (o *controllerOptions) newChecks(ctx context.Context, cfg *rest.Config, c *controller.Controller) (*checks.Loop, error) {
	opts := o.checks.loop
	opts.Registry = c.Registry()
	var api nkaws.EC2API
	if o.aws.enabled {
		loaded, err := ec2loop.LoadEC2(ctx, o.aws.region)
		if err != nil {
			return nil, err
		}
		api = loaded
		opts.Doctor.EC2 = &doctor.EC2Options{Cluster: o.aws.loop.Cluster, RegisterGrace: o.aws.loop.RegisterGrace, Region: o.aws.region}
	}
	deps, err := checks.NewDeps(cfg, api, c.Leading, o.checks.kubeletConfig)
	if err != nil {
		return nil, err
	}
	return checks.New(deps, opts)
}

// NewRoot is the controller's binary's root command (cmd/nodekeeper-controller, what the image
// runs): the controller's flags, kubectl's connection flags from client-go alone, the logging
// flags, and the shared exit codes. Tests run it in-process with the manifests' arguments.
func NewRoot(in io.Reader, out, errOut io.Writer) *cobra.Command {
	connection := kube.NewConnectionFlags()
	root := New("nodekeeper-controller", connection)
	connection.AddFlags(root.Flags())
	cli.SetupRoot(root, in, out, errOut)
	return root
}
