package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
)

// doctorAWSFlags add the EC2 section to `nodekeeper doctor`.
type doctorAWSFlags struct {
	enabled       bool
	registerGrace time.Duration
	aws           awsFlags
}

func (d *doctorAWSFlags) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&d.enabled, "aws", false, "also check EC2 (read-only): running instances of the cluster without a Node, Nodes whose instance is gone, free addresses of the nodes' and ENIConfigs' subnets against their warm pools, the capacity of instance types the built-in table does not know, and the user data of the launch template versions the Nodes were launched from (NK631-NK635, max pods above the addresses, once per version); the EKS cluster is --eks-cluster or the kubeconfig context's")
	f.DurationVar(&d.registerGrace, "register-grace", 10*time.Minute, "with --aws: an instance launched less than this ago may still be registering and is not reported")
	d.aws.AddFlags(f)
	d.aws.AddClusterFlag(f, "with --aws")
}

// validate checks that the AWS-only flags come with --aws, and that --aws can find the cluster.
func (d *doctorAWSFlags) validate(f *pflag.FlagSet) error {
	if !d.enabled {
		for _, name := range []string{"register-grace", "region", "profile", "eks-cluster"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s needs --aws", name)
			}
		}
		return nil
	}
	if _, _, err := d.aws.cluster(); err != nil {
		return fmt.Errorf("--aws needs the EKS cluster's name to find its instances: %w", err)
	}
	return nil
}

// apply loads the AWS clients when --aws was given.
func (d *doctorAWSFlags) apply(ctx context.Context, o *doctor.Options) error {
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
	o.EC2 = &doctor.EC2Options{API: clients.EC2, Cluster: cluster, RegisterGrace: d.registerGrace,
		LaunchTemplates: clients.LaunchTemplates, Nodegroups: clients.Nodegroups, AutoScaling: clients.AutoScaling}
	return nil
}
