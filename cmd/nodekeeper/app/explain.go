package app

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

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/explain"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// explainOptions are the settings of `nodekeeper explain TARGET`.
type explainOptions struct {
	g      *globalOptions
	output *outputFlags
	client *kube.Options
	aws    awsFlags

	target                      string
	htmlFile                    string
	auditLogs, bundles          []string
	useAWS, cloudWatch          bool
	logGroup, since, until      string
	awsNode                     string
	leaseGrace, stuckAfter, cfz time.Duration
	bootWindow                  time.Duration

	explain explain.Options
}

func newExplainCommand(g *globalOptions) *cobra.Command {
	o := &explainOptions{g: g, aws: awsFlags{g: g},
		output: newOutputFlags("text", "output format: text, json or yaml", "text", "json", "yaml"),
		client: kube.NewOptions(g.kube, "explain", kube.RateLimit{QPS: 20, Burst: 40})}
	cmd := &cobra.Command{
		Use:   "explain NODE|INSTANCE|PROVIDERID|LEASE|DNSNAME|IP",
		Short: "Tell one node's whole story on one timeline, with its findings and fixes",
		Long: `explain joins what every source says of one node into one timeline, oldest first:

  Node       its creation, conditions and taints (GET nodes/NAME)
  lease      its class (the lease taxonomy), holder, last renewal (GET leases/NAME)
  Event      the Events on the Node and the sandbox failures of its stuck pods
             (field-selected LISTs)
  pod        its pods stuck in ContainerCreating (LIST pods, spec.nodeName=NAME), with
             the cause ipamd's metrics measure (pods/NAME:61678/proxy/metrics)
  configz    its kubelet's configuration (nodes/NAME/proxy/configz)
  audit      with --audit-log FILE or --cloudwatch: who created and deleted the Node and
             when (file:line), what its kubelet did afterwards (renewals of a zombie)
  EC2        with --aws (read-only): the instance's state, launch time, Auto Scaling group
             and launch-template version, and that version's user data
  CloudWatch with --aws: its boot volume's IO over the --boot-window after its launch
             (GetMetricData, AWS/EBS), judged against the volume's limits (NK805)
  bundle     with --bundle FILE: that node's logs-collector bundle (matched by instance
             ID or hostname; another node's is refused), its boot and ipamd's first
             connection refused (NK622)

Then the findings that concern the node, with the codes doctor and bundle give them, and the
fix commands, each once. A zombie's terminate command is printed, never run.

TARGET is a Node name, an instance ID (i-...), a providerID (aws:///ZONE/i-...), a node lease
name, a private DNS name (ip-10-0-1-2.ec2.internal, ip-10-0-1-2.us-west-2.compute.internal)
or a node IP. It works for a node that no longer exists: its lease, the audit log and EC2 tell
the story. A read that is forbidden or fails is a gap on the timeline, naming the verb and
resource, and the rest goes on.

Exit codes (docs/exit-codes.md): 0 the story was told (gaps included), 2 bad usage, a target
that names no node or several (the nearest matches are listed), or a bundle of another node,
1 the cluster could not be read at all.`,
		Example: `  nodekeeper explain ip-10-0-1-2.us-west-2.compute.internal
  nodekeeper explain i-0abc123def4567890 --aws --audit-log kube-apiserver-audit.log
  nodekeeper explain 10.0.1.2 --bundle eks_i-0abc123def4567890.tar.gz --html node.html
  kubectl nodekeeper explain ip-10-0-1-2.ec2.internal -o json`,
		Args: cli.UsageArgs(cobra.ExactArgs(1)),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	o.output.RegisterCompletion(cmd)
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(g.nodeNames(c.Context()), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	g.addKubeFlags(cmd)
	return cmd
}

func (o *explainOptions) AddFlags(f *pflag.FlagSet) {
	o.output.AddFlags(f)
	f.StringVar(&o.htmlFile, "html", "", "also write a self-contained HTML page (the timeline drawn, the findings and fixes) to this file")
	f.StringArrayVar(&o.auditLogs, "audit-log", nil, "kube-apiserver audit log FILE or directory (as `nodekeeper audit` reads them; repeatable): who created and deleted the Node, and what its kubelet did after")
	f.BoolVar(&o.cloudWatch, "cloudwatch", false, "read the EKS cluster's audit log from CloudWatch Logs (Logs Insights) for the timeline")
	f.StringVar(&o.logGroup, "log-group", "", "with --cloudwatch: the log group (default /aws/eks/CLUSTER/cluster)")
	f.StringVar(&o.since, "since", "", "with --cloudwatch: read from this time (RFC 3339, or 2006-01-02[ 15:04[:05]] UTC; default: an hour ago)")
	f.StringVar(&o.until, "until", "", "with --cloudwatch: read until this time (default: now)")
	f.BoolVar(&o.useAWS, "aws", false, "also read EC2 (read-only): the instance's state, Auto Scaling group, launch-template version and its user data, and its boot volume's IO from CloudWatch")
	f.DurationVar(&o.bootWindow, "boot-window", doctor.DefaultBootWindow, "with --aws: how long after the launch the boot volume's IO is read (CloudWatch GetMetricData, EC2 DescribeVolumes) and judged against its IOPS and throughput limits")
	o.aws.AddFlags(f)
	o.aws.AddClusterFlag(f, "with --aws or --cloudwatch")
	f.StringArrayVar(&o.bundles, "bundle", nil, "the node's EKS logs-collector bundle (.tar.gz, its directory, or a kubelet journal; repeatable): its boot joins the timeline; another node's is refused")
	f.StringVar(&o.awsNode, "aws-node", "kube-system/aws-node", "the VPC CNI DaemonSet")
	f.DurationVar(&o.leaseGrace, "grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed before it counts as leaked")
	f.DurationVar(&o.stuckAfter, "stuck-after", doctor.DefaultStuckAfter, "how long a pod may wait in ContainerCreating before it counts as stuck")
	f.DurationVar(&o.cfz, "configz-timeout", 10*time.Second, "timeout of the configz and ipamd /metrics requests")
	o.client.AddFlags(f)
}

// Complete turns the flags into explain.Options.
func (o *explainOptions) Complete(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	if err := o.output.Validate(); err != nil {
		return err
	}
	o.target = args[0]
	if strings.TrimSpace(o.target) == "" {
		return errors.New("TARGET is empty: name a Node, instance ID, providerID, lease, private DNS name or IP")
	}
	if !o.useAWS && !o.cloudWatch {
		if err := cli.FlagsNeed(f.Changed, "aws", "region", "profile", "eks-cluster"); err != nil {
			return err
		}
	}
	if !o.useAWS {
		if err := cli.FlagsNeed(f.Changed, "aws", "boot-window"); err != nil {
			return err
		}
	}
	if !o.cloudWatch {
		for _, name := range []string{"log-group", "since", "until"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s needs --cloudwatch", name)
			}
		}
	}
	if o.cloudWatch && len(o.auditLogs) > 0 {
		return errors.New("--cloudwatch and --audit-log both give the audit log: pass one of them")
	}
	ns, name, ok := strings.Cut(o.awsNode, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--aws-node %q: want NAMESPACE/NAME", o.awsNode)
	}
	o.explain = explain.Options{Target: o.target, Lease: lease.Options{GracePeriod: o.leaseGrace}, Bundles: o.bundles, ChunkSize: o.client.ChunkSize,
		Doctor: doctor.Options{AWSNodeNamespace: ns, AWSNodeName: name, StuckAfter: o.stuckAfter, ConfigzTimeout: o.cfz, Lease: lease.Options{GracePeriod: o.leaseGrace}}}
	if o.useAWS || o.cloudWatch {
		if _, _, err := o.aws.cluster(); err != nil {
			return fmt.Errorf("--aws and --cloudwatch need the EKS cluster: %w", err)
		}
	}
	return nil
}

// Validate refuses settings explain cannot run with.
func (o *explainOptions) Validate() error {
	if err := refuseNegative(durationFlag("grace-period", o.leaseGrace), durationFlag("stuck-after", o.stuckAfter), durationFlag("configz-timeout", o.cfz), durationFlag("boot-window", o.bootWindow)); err != nil {
		return err
	}
	return o.client.Validate()
}

// Run tells the story and prints it.
func (o *explainOptions) Run(ctx context.Context) error {
	stderr := o.g.streams.ErrOut
	if len(o.auditLogs) > 0 {
		inputs, err := read.ExpandInputs(o.auditLogs, nil)
		if err != nil {
			return cli.UsageError(fmt.Errorf("--audit-log: %w", err))
		}
		o.explain.Audit, o.explain.AuditSource = inputs, explain.SourceAudit
	}
	if o.useAWS {
		cluster, _, err := o.aws.cluster()
		if err != nil {
			return err
		}
		clients, err := o.aws.clients(ctx)
		if err != nil {
			return fmt.Errorf("--aws for the EKS cluster %q: %w", cluster, err)
		}
		o.explain.AWS = &explain.AWSOptions{EC2: clients.EC2, LaunchTemplates: clients.LaunchTemplates, AutoScaling: clients.AutoScaling,
			Metrics: clients.CloudWatch, BootWindow: o.bootWindow, Cluster: cluster, Region: clients.Region}
	}
	if o.cloudWatch {
		since, err := read.ParseTimeFlag(o.since)
		if err != nil {
			return cli.UsageError(fmt.Errorf("--since: %w", err))
		}
		until, err := read.ParseTimeFlag(o.until)
		if err != nil {
			return cli.UsageError(fmt.Errorf("--until: %w", err))
		}
		cw := &cloudWatchFlags{enabled: true, logGroup: o.logGroup, parallel: 4, timeout: cwaudit.DefaultQueryTimeout, aws: o.aws}
		if err := cw.validate(pflag.NewFlagSet("explain", pflag.ContinueOnError), nil); err != nil {
			return cli.UsageError(err)
		}
		in, err := cw.input(ctx, since, until, stderr)
		if err != nil {
			return err
		}
		o.explain.Audit, o.explain.AuditSource = []read.Input{in}, explain.SourceCloudWatch
	}
	var cfg *rest.Config
	if err := interruptible(ctx, func() (err error) { cfg, err = o.client.RESTConfig(); return err }); err != nil {
		return err
	}
	cfg, requests := kube.CountRequests(cfg)
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return err
	}
	deps := doctor.DepsFrom(clients, requests)
	story, err := explain.Tell(ctx, explain.Deps{Client: deps.Client, Bulk: deps.Bulk, REST: deps.REST, Proxy: deps.Proxy, Requests: requests}, o.explain)
	var te *explain.TargetError
	switch {
	case errors.As(err, &te), errors.Is(err, explain.ErrBundle):
		return cli.UsageError(err)
	case err != nil:
		return err
	}
	return o.write(o.g.streams.Out, story)
}

func (o *explainOptions) write(out io.Writer, s *explain.Story) error {
	var err error
	switch o.output.Output {
	case "json":
		err = explain.WriteJSON(out, s)
	case "yaml":
		err = explain.WriteYAML(out, s)
	default:
		err = explain.WriteText(out, s)
	}
	if err != nil || o.htmlFile == "" {
		return err
	}
	return writeHTMLFile(o.htmlFile, func(w io.Writer) error { return explain.WriteHTML(w, s) })
}
