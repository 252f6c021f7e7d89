package app

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
)

// leasesAWSFlags add the EC2 instance of zombie and leaked node leases to `nodekeeper leases`.
type leasesAWSFlags struct {
	enabled bool
	aws     awsFlags
}

func (l *leasesAWSFlags) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&l.enabled, "aws", false, "add the EC2 instance (ID, state, launch time) of zombie and leaked node leases, found by private DNS name (read-only, docs/aws.md)")
	l.aws.AddFlags(f)
	l.aws.AddTimeoutFlag(f)
	l.aws.AddClusterFlag(f, "with --aws")
}

func (l *leasesAWSFlags) validate(f *pflag.FlagSet, watch bool) error {
	if !l.enabled {
		return cli.FlagsNeed(f.Changed, "aws", "region", "profile", "eks-cluster", "aws-timeout")
	}
	if err := l.aws.validateTimeout(); err != nil {
		return err
	}
	if watch {
		return errors.New("--aws is for a listing, not --watch")
	}
	return nil
}

// apply looks the instances up when --aws was given.
func (l *leasesAWSFlags) apply(ctx context.Context, r *leasesview.Report, popts *leasesview.PrintOptions) error {
	if !l.enabled {
		return nil
	}
	clients, err := l.aws.clients(ctx)
	if err != nil {
		return err
	}
	if err := leasesview.AddInstances(ctx, clients.EC2, r); err != nil {
		return err
	}
	popts.NodeColumns = leasesview.InstanceColumns()
	return nil
}
