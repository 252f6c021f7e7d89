package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/eni"
)

func init() { rootCmd.AddCommand(newDoctorCmd()) }

func doctorDefaultMinCNI() string { return doctor.DefaultMinCNIVersion.String() }

func newDoctorCmd() *cobra.Command {
	var (
		rf                                 reportFlags
		o                                  doctor.Options
		customNetworking, prefixDelegation bool
		minCNI, awsNode                    string
		concurrency, burst, reservedENIs   int
		qps                                float32
		configzTimeout, leaseGrace         time.Duration
		awsFlags                           doctorAWSFlags
	)
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
  ec2         with --aws (read-only, docs/aws.md): running instances of the cluster without a
              Node, Nodes whose instance is terminated or missing, subnets short of addresses

A check that lacks a permission is reported as skipped (for example "needs get on nodes/proxy")
and the run goes on. Exit codes: 0 no warning, 2 warnings, 3 errors, 1 the run failed.`,
		Example: `  nodekeeper doctor
  nodekeeper doctor -o junit > doctor.xml            # CI gate
  nodekeeper doctor --ignore NK202,NK102 -o json
  nodekeeper doctor --reserved-enis 1                 # Karpenter reservedENIs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.validate(); err != nil {
				return err
			}
			f := cmd.Flags()
			if f.Changed("custom-networking") {
				o.CustomNetworking = &customNetworking
			}
			if f.Changed("prefix-delegation") {
				o.PrefixDelegation = &prefixDelegation
			}
			if minCNI != "" {
				v, err := eni.ParseVersion(minCNI)
				if err != nil {
					return fmt.Errorf("--min-cni-version: %w", err)
				}
				o.MinCNIVersion = v
			}
			ns, name, ok := strings.Cut(awsNode, "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("--aws-node %q: want NAMESPACE/NAME", awsNode)
			}
			if concurrency < 1 {
				return fmt.Errorf("--concurrency must be at least 1")
			}
			o.AWSNodeNamespace, o.AWSNodeName = ns, name
			o.Concurrency, o.QPS, o.Burst = concurrency, qps, burst
			o.ConfigzTimeout, o.LeaseGrace, o.ReservedENIs = configzTimeout, leaseGrace, reservedENIs
			if err := o.Validate(); err != nil {
				return err
			}
			if err := awsFlags.apply(cmd.Context(), cmd.Flags(), &o, cmd.ErrOrStderr()); err != nil {
				return err
			}
			cfg, err := kubeFlags.ToRESTConfig()
			if err != nil {
				return err
			}
			rep, err := doctor.Run(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			return rf.finish(cmd, rep)
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.BoolVar(&customNetworking, "custom-networking", false, "assume VPC CNI custom networking on/off instead of reading aws-node")
	f.BoolVar(&prefixDelegation, "prefix-delegation", false, "assume VPC CNI prefix delegation on/off instead of reading aws-node")
	f.StringVar(&o.CNIVersion, "cni-version", "", "VPC CNI version instead of the aws-node image tag")
	f.IntVar(&reservedENIs, "reserved-enis", 0, "ENIs kept from pods besides custom networking and the trunk ENI (e.g. Karpenter reservedENIs used for other ENIs)")
	f.StringVar(&minCNI, "min-cni-version", "", "warn about VPC CNI versions older than this (default "+doctorDefaultMinCNI()+")")
	f.StringVar(&awsNode, "aws-node", "kube-system/aws-node", "the VPC CNI DaemonSet")
	f.IntVar(&concurrency, "concurrency", 16, "configz requests in flight")
	f.DurationVar(&configzTimeout, "configz-timeout", 10*time.Second, "timeout of one configz request")
	f.Float32Var(&qps, "qps", 100, "client requests per second (one configz request per node)")
	f.IntVar(&burst, "burst", 300, "client request burst")
	f.DurationVar(&o.StuckAfter, "stuck-after", doctor.DefaultStuckAfter, "how long a pod may wait in ContainerCreating before it counts as stuck")
	f.DurationVar(&o.CSRPendingAfter, "csr-pending-after", doctor.DefaultCSRPendingAfter, "how long a kubelet-serving certificate request may stay unapproved")
	awsFlags.add(f)
	f.DurationVar(&leaseGrace, "lease-grace-period", 0, "how long an ownerless lease without a Node must go unrenewed before it counts as leaked (default 1h)")
	return cmd
}
