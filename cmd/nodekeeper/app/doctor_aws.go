package app

import (
	"context"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// doctorAWSFlags add the EC2 section to `nodekeeper doctor`.
type doctorAWSFlags struct {
	// deps holds the AWS clients apply loaded, for Run's Deps.
	deps          doctor.Deps
	enabled       bool
	registerGrace time.Duration
	bootWindow    time.Duration
	auditLogs     []string
	aws           awsFlags
}

func (d *doctorAWSFlags) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&d.enabled, "aws", false, "also check EC2 (read-only): running instances of the cluster without a Node, Nodes whose instance is gone, free addresses of the nodes' and ENIConfigs' subnets against their warm pools, the capacity of instance types the built-in table does not know, and the user data of the launch template versions the Nodes were launched from (NK631-NK635, max pods above the addresses, once per version); the EKS cluster is --eks-cluster or the kubeconfig context's")
	f.DurationVar(&d.registerGrace, "register-grace", 10*time.Minute, "with --aws: an instance launched less than this ago may still be registering and is not reported")
	f.DurationVar(&d.bootWindow, "boot-window", doctor.DefaultBootWindow, "with --aws: check the root volumes of Nodes launched less than this ago against their IOPS and throughput limits (CloudWatch GetMetricData, EC2 DescribeVolumes), and name those whose boot was IO-bound with the pods stuck on them")
	f.StringArrayVar(&d.auditLogs, "audit-log", nil, "with --aws: kube-apiserver audit log FILE or directory (as `nodekeeper audit` reads them; repeatable): name who deleted the Node of each instance running without one, and when")
	d.aws.AddFlags(f)
	d.aws.AddTimeoutFlag(f)
	d.aws.AddClusterFlag(f, "with --aws")
}

// validate checks that the AWS-only flags come with --aws, and that --aws can find the cluster.
func (d *doctorAWSFlags) validate(f *pflag.FlagSet) error {
	if !d.enabled {
		return cli.FlagsNeed(f.Changed, "aws", "register-grace", "boot-window", "audit-log", "region", "profile", "eks-cluster", "aws-timeout")
	}
	if err := d.aws.validateTimeout(); err != nil {
		return err
	}
	if d.bootWindow <= 0 {
		return fmt.Errorf("--boot-window must be positive (got %s)", d.bootWindow)
	}
	if _, _, err := d.aws.cluster(); err != nil {
		return fmt.Errorf("--aws needs the EKS cluster's name to find its instances: %w", err)
	}
	return nil
}

// apply loads the AWS clients when --aws was given.
func (d *doctorAWSFlags) apply(ctx context.Context, o *doctor.Options, stderr io.Writer) error {
	if !d.enabled {
		return nil
	}
	cluster, _, err := d.aws.cluster()
	if err != nil {
		return err
	}
	clients, err := d.aws.clients(ctx)
	if err != nil {
		return fmt.Errorf("--aws for the EKS cluster %q: %w", cluster, err)
	}
	deletions, err := doctor.ReadNodeDeletions(d.auditLogs, func(msg string) { fmt.Fprintln(stderr, textsafe.Escape(msg)) })
	if err != nil {
		return err
	}
	o.EC2 = &doctor.EC2Options{Cluster: cluster, RegisterGrace: d.registerGrace, Region: clients.Region,
		BootWindow: d.bootWindow, AuditLog: len(d.auditLogs) > 0, NodeDeletions: deletions}
	d.deps = doctor.Deps{EC2: clients.EC2, CloudWatch: clients.CloudWatch,
		LaunchTemplates: clients.LaunchTemplates, Nodegroups: allclients.Nodegroups(clients.Nodegroups), AutoScaling: clients.AutoScaling}
	return nil
}

// addClients gives deps the AWS clients apply loaded (none without --aws).
func (d *doctorAWSFlags) addClients(deps *doctor.Deps) {
	deps.EC2, deps.CloudWatch = d.deps.EC2, d.deps.CloudWatch
	deps.LaunchTemplates, deps.Nodegroups, deps.AutoScaling = d.deps.LaunchTemplates, d.deps.Nodegroups, d.deps.AutoScaling
}
