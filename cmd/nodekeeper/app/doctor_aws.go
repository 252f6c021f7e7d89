package app

import (
	"context"
	"errors"
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
	f.BoolVar(&d.enabled, "aws", false, "also check EC2 (read-only): running instances of the cluster without a Node, Nodes whose instance is gone, free addresses of the nodes' and ENIConfigs' subnets against their warm pools, and the capacity of instance types the built-in table does not know; needs --cluster NAME|ARN")
	f.DurationVar(&d.registerGrace, "register-grace", 10*time.Minute, "with --aws: an instance launched less than this ago may still be registering and is not reported")
	d.aws.AddFlags(f)
}

// validate checks that the AWS-only flags come with --aws, and that --aws can find the cluster.
func (d *doctorAWSFlags) validate(f *pflag.FlagSet) error {
	if !d.enabled {
		for _, name := range []string{"register-grace", "region", "profile"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s needs --aws", name)
			}
		}
		return nil
	}
	if cluster, _ := d.aws.g.eksCluster(); cluster == "" {
		return errors.New("--aws needs the EKS cluster's name to find its instances: pass --cluster NAME (or the cluster's ARN)")
	}
	return nil
}

// apply loads the AWS clients when --aws was given.
func (d *doctorAWSFlags) apply(ctx context.Context, o *doctor.Options) error {
	if !d.enabled {
		return nil
	}
	cluster, _ := d.aws.g.eksCluster()
	clients, err := d.aws.clients(ctx)
	if err != nil {
		return err
	}
	o.EC2 = &doctor.EC2Options{API: clients.EC2, Cluster: cluster, RegisterGrace: d.registerGrace}
	return nil
}
