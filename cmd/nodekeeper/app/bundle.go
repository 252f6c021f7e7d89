package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/bundle"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// bundleOptions are the settings of `nodekeeper bundle`.
type bundleOptions struct {
	g *globalOptions

	report     reportFlags
	bundle     bundle.Options
	minCNI     string
	ioDelay    time.Duration
	maxMember  int64
	maxTotal   int64
	maxMembers int
	userData   string

	input string // the argument, set by Complete
}

func newBundleCommand(g *globalOptions) *cobra.Command {
	o := &bundleOptions{g: g, report: newReportFlags()}
	cmd := &cobra.Command{
		Use:   "bundle FILE.tar.gz|DIR|KUBELET-JOURNAL",
		Short: "Check an EKS logs collector bundle for the causes of pods stuck at scale",
		Long: `bundle reads an EKS logs collector bundle (eks-log-collector.sh output) in place, without
extracting it, and reports: "pull QPS exceeded", lease and node status errors in the kubelet log;
ipamd that is unreachable (127.0.0.1:50051, ipamd.sock) or cannot reach the API server; EC2 API
throttling; processes delayed by block IO, and whether that was while the node booted, when ipamd
refused connections; user data that overrides the hostname, flushes iptables or manages Docker on a
containerd node; the user data's own errors in cloud-init's and nodeadm's logs (a failed script, a
command not found, nodeadm's errors, bootstrap.sh on AL2023); the kubelet configuration (registryPullQPS, maxPods against
the instance type's VPC CNI addresses) and the aws-node settings.

The input is the collector's .tar.gz, the directory it unpacks to, or a kubelet journal
(journalctl -u kubelet output, gzip-compressed or not; only the kubelet log checks run on it).
--user-data FILE adds the node's EC2 user data (a shell script, MIME multi-part or an AL2023
NodeConfig): the bootstrap checks run on its commands even when cloud-init-output.log does not
show them, and its kubelet settings are used when the input has no kubelet configuration.

Exit codes (docs/exit-codes.md): 0 nothing at or above --fail-on, 3 a finding at or above it
(default: warning), 2 bad usage, 1 the bundle could not be read (a hostile or malformed archive
is refused with a clear error).`,
		Example: `  nodekeeper bundle eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8.tar.gz
  nodekeeper bundle node.tar.gz --instance-type m5.large -o junit > bundle.xml
  nodekeeper bundle eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8/ --user-data user-data.mime
  journalctl -u kubelet > kubelet.journal; nodekeeper bundle kubelet.journal --user-data nodeconfig.yaml --instance-type m5.large`,
		Args: cli.UsageArgs(cobra.ExactArgs(1)),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	o.report.RegisterCompletion(cmd)
	_ = cmd.RegisterFlagCompletionFunc("instance-type", completeInstanceTypes)
	return cmd
}

func (o *bundleOptions) AddFlags(f *pflag.FlagSet) {
	o.report.AddFlags(f)
	f.StringVar(&o.bundle.InstanceType, "instance-type", "", "instance type of the node (default: from ipamd.log)")
	f.IntVar(&o.bundle.ReservedENIs, "reserved-enis", 0, "ENIs kept from pods besides custom networking and the trunk ENI")
	f.StringVar(&o.minCNI, "min-cni-version", "", "warn about VPC CNI versions older than this (default "+defaultMinCNI()+")")
	f.DurationVar(&o.ioDelay, "io-delay-threshold", bundle.DefaultIODelayThreshold, "report processes that waited this long for block IO")
	f.Int64Var(&o.maxMember, "max-member-size", bundle.DefaultMaxMemberSize, "refuse members larger than this many bytes")
	f.Int64Var(&o.maxTotal, "max-total-size", bundle.DefaultMaxTotalSize, "refuse archives that inflate past this many bytes")
	f.IntVar(&o.maxMembers, "max-members", bundle.DefaultMaxMembers, "refuse archives with more members")
	f.StringVar(&o.userData, "user-data", "", "the node's EC2 user data: shell script, MIME multi-part or AL2023 NodeConfig")
}

// Validate checks the flags.
func (o *bundleOptions) Validate() error {
	if err := o.report.Validate(); err != nil {
		return err
	}
	if o.bundle.InstanceType != "" {
		if _, err := eni.Lookup(o.bundle.InstanceType); err != nil {
			return fmt.Errorf("--instance-type: %w", err)
		}
	}
	if o.bundle.ReservedENIs < 0 {
		return fmt.Errorf("--reserved-enis must not be negative")
	}
	return refuseNegative(durationFlag("io-delay-threshold", o.ioDelay), intFlag("max-member-size", o.maxMember),
		intFlag("max-total-size", o.maxTotal), intFlag("max-members", int64(o.maxMembers)))
}

// Complete fills the analysis options from the flags.
func (o *bundleOptions) Complete(_ *cobra.Command, args []string) error {
	o.input = args[0]
	if o.minCNI != "" {
		v, err := eni.ParseVersion(o.minCNI)
		if err != nil {
			return fmt.Errorf("--min-cni-version: %w", err)
		}
		o.bundle.MinCNIVersion = v
	}
	o.bundle.IODelayThreshold = o.ioDelay
	o.bundle.Limits = bundle.Limits{MaxMemberSize: o.maxMember, MaxTotalSize: o.maxTotal, MaxMembers: o.maxMembers}
	return nil
}

// Run reads --user-data, analyses the bundle and prints the findings. The reading and the
// analysis do not watch ctx; a first Ctrl-C or SIGTERM ends the run at once all the same.
func (o *bundleOptions) Run(ctx context.Context) error {
	var rep *findings.Report
	err := interruptible(ctx, func() error {
		if o.userData != "" {
			data, err := readUserDataFile(o.userData)
			if err != nil {
				return err
			}
			o.bundle.UserData, o.bundle.UserDataName = data, filepath.Base(o.userData)
			// Refused before the bundle is read: user data with nothing cloud-init or nodeadm
			// would run is the wrong file.
			if err := bundle.CheckUserData(o.bundle.UserDataName, data); err != nil {
				return err
			}
		}
		start := time.Now()
		var err error
		if rep, err = bundle.AnalyzeFile(o.input, o.bundle); err != nil {
			return fmt.Errorf("%s: %w", o.input, err)
		}
		rep.Duration = time.Since(start)
		return nil
	})
	if err != nil {
		return err
	}
	if rep.Partial != "" {
		// The report says so too (a "partial:" line, "partial": true); stderr says it where a
		// script reading the report's JSON would not look.
		fmt.Fprintf(o.g.streams.ErrOut, "warning: %s: the report is partial: %s\n", textsafe.Escape(o.input), textsafe.Escape(rep.Partial))
	}
	return o.report.finish(o.g.streams.Out, rep)
}

// readUserDataFile reads --user-data, refusing anything but a regular file of at most
// bundle.MaxUserDataSize bytes. A FIFO, device or socket is refused before it is opened (opening
// a FIFO waits for a writer), and opened without waiting should one be swapped in meanwhile.
func readUserDataFile(name string) ([]byte, error) {
	if st, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--user-data %s: not a regular file (%s)", name, fileKind(st.Mode()))
	}
	f, err := os.OpenFile(name, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--user-data %s: not a regular file (%s)", name, fileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, bundle.MaxUserDataSize+1))
	if err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	}
	if len(data) > bundle.MaxUserDataSize {
		return nil, fmt.Errorf("--user-data %s: more than %d bytes; EC2 user data is at most 16 KB", name, bundle.MaxUserDataSize)
	}
	return data, nil
}
