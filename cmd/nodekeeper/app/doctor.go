package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/progress"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// defaultMinCNI is the oldest VPC CNI version doctor and bundle accept without a warning.
func defaultMinCNI() string { return rules.DefaultMinCNIVersion.String() }

// doctorOptions are the settings of `nodekeeper doctor`.
type doctorOptions struct {
	g *globalOptions

	report                             reportFlags
	doctor                             doctor.Options
	customNetworking, prefixDelegation bool
	minCNI, awsNode                    string
	workers, cniWorkers, reservedENIs  int
	client                             *kube.Options
	configzTimeout, leaseGrace         time.Duration
	aws                                doctorAWSFlags
	progress                           progressFlag
}

func newDoctorCommand(g *globalOptions) *cobra.Command {
	o := &doctorOptions{g: g, report: newReportFlags(), aws: doctorAWSFlags{aws: awsFlags{g: g}},
		client: kube.NewOptions(g.kube, "doctor", doctor.DefaultRateLimit)}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check nodes, kubelets and the VPC CNI of a live cluster for problems at scale",
		Long: `doctor checks a live cluster in seconds:

  nodes       each kubelet's pod capacity against the pod addresses the Amazon VPC CNI can give
              its instance type (custom networking, prefix delegation, MAX_ENI, security groups
              for pods and reserved ENIs taken into account)
  kubelet     each kubelet's configuration read through the API server (nodes/NAME/proxy/configz):
              registryPullQPS/registryBurst against the pod density, serializeImagePulls,
              maxPods, kubeAPIQPS
  versions    kubelet version skew against the API server; kubelets that leak leases (< 1.29)
  heartbeats  stale, leaked, zombie and unowned node leases (the nodekeeper lease taxonomy)
  aws-node    CLUSTER_ENDPOINT, warm pool settings, the prefix delegation combination that makes
              aws-node exit, IP_COOLDOWN_PERIOD, custom networking without a max pods change,
              old CNI versions
  apf         requests rejected by API priority and fairness (from /metrics)
  pod-networking
              pods stuck in ContainerCreating (older than --stuck-after) grouped by the cause
              of their FailedCreatePodSandBox events (no address on the node, subnet exhausted,
              ipamd unreachable, EC2 throttled, other), by node and by namespace; nodes out of
              VPC addresses with the max-pods fix for their OS and provisioner; missing or
              incomplete ENIConfigs; Karpenter reservedENIs with custom networking; unapproved
              kubelet-serving certificate requests; CSINodes and CNINodes without their Node
  cni-metrics each aws-node pod's ipamd metrics read through the API server
              (pods/NAME:61678/proxy/metrics): EC2 API errors by code, ipamd errors and the
              address pool per node, and for each node with stuck pods the cause measured there
              (pool full at maxPods, subnet out of addresses, EC2 throttling, aws-node not
              ready, or unknown)
  ec2         with --aws (read-only, docs/aws.md): running instances of the cluster without a
              Node (with its Auto Scaling group, who deleted its Node with --audit-log, and
              the command that removes it), Nodes whose instance is terminated or missing,
              subnets short of addresses, root volumes IO-bound at boot (--boot-window)

A check that lacks a permission is reported as skipped (for example "needs get on nodes/proxy")
and the run goes on. Exit codes (docs/exit-codes.md): 0 nothing at or above --fail-on, 3 a finding
at or above it (default: warning), 2 bad usage, 1 the run failed.`,
		Example: `  nodekeeper doctor
  nodekeeper doctor -o junit > doctor.xml            # CI gate
  nodekeeper doctor --ignore NK202,NK102 -o json
  nodekeeper doctor --aws --html doctor.html          # one page for a ticket
  nodekeeper doctor --reserved-enis 1                 # Karpenter reservedENIs`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	o.report.RegisterCompletion(cmd)
	o.progress.RegisterCompletion(cmd)
	g.addKubeFlags(cmd)
	return cmd
}

func (o *doctorOptions) AddFlags(f *pflag.FlagSet) {
	o.report.AddFlags(f)
	f.StringVar(&o.report.htmlFile, "html", "", "also write a self-contained HTML page of the report (each finding with its own remediation) to this file, for a ticket")
	f.BoolVar(&o.customNetworking, "custom-networking", false, "assume VPC CNI custom networking on/off instead of reading aws-node")
	f.BoolVar(&o.prefixDelegation, "prefix-delegation", false, "assume VPC CNI prefix delegation on/off instead of reading aws-node")
	f.StringVar(&o.doctor.CNIVersion, "cni-version", "", "VPC CNI version instead of the aws-node image tag")
	f.IntVar(&o.reservedENIs, "reserved-enis", 0, "ENIs kept from pods besides custom networking and the trunk ENI (e.g. Karpenter reservedENIs used for other ENIs)")
	f.StringVar(&o.minCNI, "min-cni-version", "", "warn about VPC CNI versions older than this (default "+defaultMinCNI()+")")
	f.StringVar(&o.awsNode, "aws-node", "kube-system/aws-node", "the VPC CNI DaemonSet")
	f.IntVar(&o.workers, "workers", doctor.DefaultWorkers, "configz requests in flight")
	f.IntVar(&o.workers, "concurrency", doctor.DefaultWorkers, "configz requests in flight")
	_ = f.MarkDeprecated("concurrency", "use --workers")
	f.IntVar(&o.cniWorkers, "cni-metrics-workers", doctor.DefaultWorkers, "aws-node (ipamd) /metrics requests in flight")
	f.DurationVar(&o.configzTimeout, "configz-timeout", 10*time.Second, "timeout of one configz or aws-node /metrics request")
	o.client.AddFlags(f) // --qps and --burst pace the configz requests too, one per node
	f.DurationVar(&o.doctor.StuckAfter, "stuck-after", doctor.DefaultStuckAfter, "how long a pod may wait in ContainerCreating before it counts as stuck")
	f.DurationVar(&o.doctor.CSRPendingAfter, "csr-pending-after", doctor.DefaultCSRPendingAfter, "how long a kubelet-serving certificate request may stay unapproved")
	o.aws.AddFlags(f)
	f.DurationVar(&o.leaseGrace, "grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed before it counts as leaked")
	f.DurationVar(&o.leaseGrace, "lease-grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed before it counts as leaked")
	_ = f.MarkDeprecated("lease-grace-period", "use --grace-period, as gc and leases")
	o.progress.AddFlags(f)
}

// Complete turns the flags into doctor.Options.
func (o *doctorOptions) Complete(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	if err := o.report.Validate(); err != nil {
		return err
	}
	if err := o.progress.Complete(o.g.streams.ErrOut); err != nil {
		return err
	}
	if f.Changed("custom-networking") {
		o.doctor.CustomNetworking = &o.customNetworking
	}
	if f.Changed("prefix-delegation") {
		o.doctor.PrefixDelegation = &o.prefixDelegation
	}
	if o.minCNI != "" {
		v, err := eni.ParseVersion(o.minCNI)
		if err != nil {
			return fmt.Errorf("--min-cni-version: %w", err)
		}
		o.doctor.MinCNIVersion = v
	}
	ns, name, ok := strings.Cut(o.awsNode, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--aws-node %q: want NAMESPACE/NAME", o.awsNode)
	}
	o.doctor.AWSNodeNamespace, o.doctor.AWSNodeName = ns, name
	o.doctor.Workers, o.doctor.CNIMetricsWorkers, o.doctor.ChunkSize = o.workers, o.cniWorkers, o.client.ChunkSize
	o.doctor.ConfigzTimeout, o.doctor.Lease, o.doctor.ReservedENIs = o.configzTimeout, lease.Options{GracePeriod: o.leaseGrace}, o.reservedENIs
	return o.aws.validate(f)
}

// Validate refuses settings doctor cannot run with.
func (o *doctorOptions) Validate() error {
	if o.workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	if o.cniWorkers < 1 {
		return fmt.Errorf("--cni-metrics-workers must be at least 1")
	}
	if err := refuseNegative(durationFlag("configz-timeout", o.configzTimeout)); err != nil {
		return err
	}
	if err := o.client.Validate(); err != nil {
		return err
	}
	return o.doctor.Validate()
}

// Run checks the cluster (and with --aws, EC2) and prints the findings.
func (o *doctorOptions) Run(ctx context.Context) error {
	if err := o.aws.apply(ctx, &o.doctor, o.g.streams.ErrOut); err != nil {
		return err
	}
	var cfg *rest.Config
	// Loading the kubeconfig reads a file that may be a pipe (--kubeconfig <(...)): a first
	// Ctrl-C must not wait for its writer.
	err := interruptible(ctx, func() (err error) { cfg, err = o.client.RESTConfig(); return err })
	if err != nil {
		return err
	}
	cfg, requests := kube.CountRequests(cfg)
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return err
	}
	o.doctor.Target = cfg.Host
	// One meter per phase of per-node reads, each made by its first progress call when progress
	// is shown, and finished when its last node is done: the other checks go on without a line
	// to redraw.
	var meters []*progress.Meter
	phase := func(what string) func(done, total int) {
		var meter *progress.Meter
		return func(done, total int) {
			if meter == nil {
				meter = o.progress.meter(o.g.streams.ErrOut, progress.Options{Unit: "nodes", Total: int64(total)})
				meters = append(meters, meter)
			}
			meter.Set(int64(done), what)
			if done == total {
				meter.Finish()
			}
		}
	}
	if o.progress.show {
		o.doctor.ConfigzProgress = phase("kubelet configz read")
		o.doctor.CNIMetricsProgress = phase("aws-node metrics read")
	}
	deps := doctor.DepsFrom(clients, requests)
	o.aws.addClients(&deps)
	rep, err := doctor.Run(ctx, deps, o.doctor)
	for _, m := range meters {
		m.Finish() // interrupted part way: end the line before anything else is printed
	}
	if err != nil {
		return err
	}
	return o.report.finish(o.g.streams.Out, rep)
}
