package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
	"github.com/nodekeeper/nodekeeper/internal/plan/render"
	"github.com/nodekeeper/nodekeeper/internal/plan/scenario"
)

// planOptions are the settings of `nodekeeper plan`.
type planOptions struct {
	g *globalOptions

	output *outputFlags
	client *kube.Options
	aws    awsFlags
	useAWS bool

	add, podsPerNode, maxPods, pullsPerNode, reservedENIs int
	instanceType, nodegroup, eniConfig                    string
	subnets, zones, sets                                  []string
	prefixDelegation                                      bool
	scenarioFile, htmlFile, awsNode, ec2Bucket            string
	maxWait                                               time.Duration

	// set by Complete
	reqs     []gather.Request
	changes  map[string]string
	scenario *scenario.Scenario
	bucket   *plan.Bucket
	ec2      nkaws.EC2API
}

func newPlanCommand(g *globalOptions) *cobra.Command {
	o := &planOptions{g: g, aws: awsFlags{g: g},
		output: newOutputFlags("text", "output format: text, json or yaml", "text", "json", "yaml"),
		client: kube.NewOptions(g.kube, "plan", kube.RateLimit{QPS: 50, Burst: 100})}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Before a scale-up: which limit breaks first, at how many nodes, and the fix",
		Long: `plan answers "what happens if I add these nodes?" against the live cluster, read-only.

For the nodes to add (--add N --instance-type T, placed by --nodegroup, --subnet, --zone or
--eniconfig, or several node groups from --scenario FILE) it computes the node count at which
each limit is reached:

  subnet addresses   each subnet's free addresses (--aws: DescribeSubnets) against what each new
                     node holds under the aws-node warm pool (WARM_ENI_TARGET, WARM_IP_TARGET,
                     MINIMUM_IP_TARGET, WARM_PREFIX_TARGET, prefix delegation, custom networking)
  pods per node      the pods each node runs and its maxPods against the pods its addresses allow
  EC2 API calls      ipamd's CreateNetworkInterface, AttachNetworkInterface,
                     ModifyNetworkInterfaceAttribute and AssignPrivateIpAddresses calls against
                     EC2's token bucket for mutating actions (documented defaults: 50, refilled
                     at 5/s; "Request throttling for the Amazon EC2 API"), within --max-address-wait
  image pulls        the pulls a node starts with against the kubelet's registryBurst and
                     registryPullQPS
  priority level     the kubelets' lease and status writes against the seats of the priority
                     level serving them (node-high), when /metrics can be read

Addresses, pods per node and the priority level fail (pods never start); image pulls and
the EC2 refill only delay them. The first limit to fail is named first, with the fix that
moves it furthest, and each delay on its own line with the seconds it adds. --set KEY=VALUE
and --prefix-delegation re-run the plan with changed aws-node settings, side by side with
today's. Exit codes: 0 the plan fits, 3 it does not (the what-if's verdict when settings were
changed), 2 bad usage, 1 the run failed. See docs/plan.md.`,
		Example: `  nodekeeper plan --nodegroup web --add 300 --aws
  nodekeeper plan --add 300 --instance-type m5.large --subnet subnet-0a --subnet subnet-0b --aws
  nodekeeper plan --nodegroup web --add 300 --aws --set WARM_IP_TARGET=5 --set MINIMUM_IP_TARGET=20
  nodekeeper plan --nodegroup web --add 300 --aws --prefix-delegation -o json
  nodekeeper plan --scenario monday.yaml --aws --html plan.html`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	o.output.RegisterCompletion(cmd)
	_ = cmd.RegisterFlagCompletionFunc("instance-type", completeInstanceTypes)
	g.addKubeFlags(cmd)
	return cmd
}

func (o *planOptions) AddFlags(f *pflag.FlagSet) {
	o.output.AddFlags(f)
	f.IntVar(&o.add, "add", 0, "how many nodes to add")
	f.StringVar(&o.instanceType, "instance-type", "", "the new nodes' instance type (default: the one most of --nodegroup's nodes have)")
	f.StringVar(&o.nodegroup, "nodegroup", "", "the node group (or Karpenter node pool) the nodes join: its nodes give the instance type, maxPods, zones, OS and, with --aws, subnets")
	f.StringArrayVar(&o.subnets, "subnet", nil, "a subnet the new nodes launch in (repeatable; default: --nodegroup's with --aws)")
	f.StringArrayVar(&o.zones, "zone", nil, "a zone the new nodes launch in (repeatable); with custom networking it selects the ENIConfig named after it when ENI_CONFIG_LABEL_DEF is the zone label")
	f.StringVar(&o.eniConfig, "eniconfig", "", "the ENIConfig the new nodes select (custom networking)")
	f.IntVar(&o.podsPerNode, "pods-per-node", 0, "pods each new node runs, host-network pods included (default: maxPods)")
	f.IntVar(&o.maxPods, "max-pods", 0, "the new kubelets' maxPods (default: --nodegroup's nodes' pod capacity, else the EKS AMI's value for the type)")
	f.IntVar(&o.pullsPerNode, "pulls-per-node", 0, "image pulls each new node starts with (default: one per pod that gets an address)")
	f.IntVar(&o.reservedENIs, "reserved-enis", 0, "ENIs kept from pods besides custom networking's (Karpenter reservedENIs)")
	f.StringVar(&o.scenarioFile, "scenario", "", "a scenario file (YAML, kind PlanScenario) with several node groups; replaces --add and the placement flags")
	f.StringArrayVar(&o.sets, "set", nil, "KEY=VALUE: an aws-node setting to try beside today's (repeatable; KEY= unsets it), e.g. WARM_IP_TARGET=5")
	f.BoolVar(&o.prefixDelegation, "prefix-delegation", false, "try prefix delegation (ENABLE_PREFIX_DELEGATION=true) beside today's settings")
	f.StringVar(&o.htmlFile, "html", "", "also write a self-contained HTML page (each limit's headroom against nodes added) to this file")
	f.StringVar(&o.awsNode, "aws-node", "kube-system/aws-node", "the VPC CNI DaemonSet")
	f.DurationVar(&o.maxWait, "max-address-wait", plan.DefaultMaxAddressWait, "how long new nodes may wait for their addresses while EC2 throttles ipamd before the EC2 limit counts as reached")
	f.StringVar(&o.ec2Bucket, "ec2-bucket", "", "CAPACITY/REFILL: the account's EC2 token bucket for mutating actions, if not the documented default 50/5")
	f.BoolVar(&o.useAWS, "aws", false, "also read EC2 (read-only): the node group's subnets (DescribeInstances), their free addresses (DescribeSubnets), instance types the built-in table does not know")
	o.aws.AddFlags(f)
	o.aws.AddTimeoutFlag(f)
	o.client.AddFlags(f)
}

// Complete reads the scenario, turns the flags into requests and the what-if changes, and loads
// the AWS clients with --aws.
func (o *planOptions) Complete(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	if err := o.output.Validate(); err != nil {
		return err
	}
	o.changes = map[string]string{}
	for _, s := range o.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("--set %q: want KEY=VALUE", s)
		}
		o.changes[k] = v
	}
	if o.prefixDelegation {
		o.changes[eni.EnvPrefixDelegation] = "true"
	}
	if o.ec2Bucket != "" {
		c, r, ok := strings.Cut(o.ec2Bucket, "/")
		capacity, err1 := strconv.Atoi(c)
		refill, err2 := strconv.ParseFloat(r, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("--ec2-bucket %q: want CAPACITY/REFILL, e.g. 50/5", o.ec2Bucket)
		}
		o.bucket = &plan.Bucket{Capacity: capacity, Refill: refill}
		if err := o.bucket.Validate(); err != nil {
			return fmt.Errorf("--ec2-bucket %q: %w", o.ec2Bucket, err)
		}
	}
	if o.scenarioFile != "" {
		for _, name := range []string{"add", "instance-type", "nodegroup", "subnet", "zone", "eniconfig", "pods-per-node", "max-pods", "pulls-per-node", "reserved-enis"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s and --scenario do not go together: the scenario lists the node groups", name)
			}
		}
		var err error
		if o.scenario, err = scenario.ReadFile(o.scenarioFile); err != nil {
			if errors.As(err, new(*fs.PathError)) {
				return cli.WithExitCode(cli.ExitFailed, err) // unreadable: not a usage error
			}
			return err // too large, malformed or refused: bad usage, naming the file and field
		}
		o.reqs = o.scenario.Requests()
		for k, v := range o.scenario.Set {
			if _, given := o.changes[k]; !given {
				o.changes[k] = v
			}
		}
		if o.bucket == nil && o.scenario.EC2 != nil {
			o.bucket = o.scenario.EC2
		}
		if !f.Changed("max-address-wait") && o.scenario.Wait() > 0 {
			o.maxWait = o.scenario.Wait()
		}
	} else {
		o.reqs = []gather.Request{{Nodegroup: o.nodegroup, InstanceType: o.instanceType, Add: o.add, PodsPerNode: o.podsPerNode,
			MaxPods: o.maxPods, PullsPerNode: o.pullsPerNode, ReservedENIs: o.reservedENIs, Subnets: o.subnets, Zones: o.zones, ENIConfig: o.eniConfig}}
	}
	if !o.useAWS {
		return cli.FlagsNeed(f.Changed, "aws", "region", "profile", "aws-timeout")
	}
	if err := o.aws.validateTimeout(); err != nil {
		return err
	}
	clients, err := o.aws.clients(cmd.Context())
	if err != nil {
		return cli.WithExitCode(cli.ExitFailed, err)
	}
	o.ec2 = clients.EC2
	return nil
}

// Validate refuses a plan that adds nothing or goes nowhere.
func (o *planOptions) Validate() error {
	if err := o.client.Validate(); err != nil {
		return err
	}
	if o.scenario == nil {
		if o.add < 1 {
			return errors.New("--add N (at least 1) is required, or --scenario FILE")
		}
		if o.nodegroup == "" && o.instanceType == "" {
			return errors.New("--instance-type is required without --nodegroup")
		}
	}
	for name, v := range map[string]int{"pods-per-node": o.podsPerNode, "max-pods": o.maxPods, "pulls-per-node": o.pullsPerNode, "reserved-enis": o.reservedENIs} {
		if v < 0 {
			return fmt.Errorf("--%s must not be negative", name)
		}
	}
	if o.maxWait <= 0 {
		return errors.New("--max-address-wait must be positive")
	}
	if ns, name, ok := strings.Cut(o.awsNode, "/"); !ok || ns == "" || name == "" {
		return fmt.Errorf("--aws-node %q: want NAMESPACE/NAME", o.awsNode)
	}
	return nil
}

// Run gathers, plans and prints; a plan that does not fit exits 3.
func (o *planOptions) Run(ctx context.Context) error {
	cfg, err := o.client.RESTConfig()
	if err != nil {
		return err
	}
	ns, name, _ := strings.Cut(o.awsNode, "/")
	in, err := gather.Gather(ctx, cfg, gather.Options{AWSNodeNamespace: ns, AWSNodeName: name, EC2: o.ec2, Limit: o.client.Limit, ChunkSize: o.client.ChunkSize}, o.reqs)
	if err != nil {
		return err
	}
	in.MaxAddressWait = o.maxWait
	if o.bucket != nil {
		in.EC2 = plan.EC2Buckets{Mutating: *o.bucket, Source: "given"}
	}
	var changes map[string]string
	if len(o.changes) > 0 {
		changes = o.changes
	}
	res, err := plan.Run(in, changes)
	if err != nil {
		return cli.WithExitCode(cli.ExitFailed, err)
	}
	if err := o.write(o.g.streams.Out, res); err != nil {
		return err
	}
	return planExit(res)
}

// planExit is exit code 3 with the verdict when the plan that would run (the what-if's, when
// settings were changed) does not fit.
func planExit(res *plan.Result) error {
	if res.Fits {
		return nil
	}
	p := res.Today
	if res.WhatIf != nil {
		p = res.WhatIf
	}
	v := render.Verdict(p)
	msg := "the plan does not fit: " + strings.TrimPrefix(v, "DOES NOT FIT: ")
	if rest, delayed := strings.CutPrefix(v, "DELAYED: "); delayed {
		msg = "the plan waits past its bound: " + rest
	}
	return cli.WithExitCode(cli.ExitFindings, errors.New(msg))
}

func (o *planOptions) write(out io.Writer, res *plan.Result) error {
	var err error
	switch o.output.Output {
	case "json":
		err = render.WriteJSON(out, res)
	case "yaml":
		err = render.WriteYAML(out, res)
	default:
		err = render.WriteText(out, res)
	}
	if err != nil || o.htmlFile == "" {
		return err
	}
	return writeHTMLFile(o.htmlFile, func(w io.Writer) error { return render.WriteHTML(w, res) })
}
