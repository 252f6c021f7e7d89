package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/nodekeeper/nodekeeper/internal/bundle"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

func init() { rootCmd.AddCommand(newBundleCmd()) }

// reportFlags are the output flags doctor and bundle share.
type reportFlags struct {
	output     string
	color      string
	ignore     []string
	maxPerRule int
}

func (f *reportFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, json or junit")
	fs.StringVar(&f.color, "color", "auto", "colour in text output: auto (on a terminal without NO_COLOR), always or never")
	fs.StringSliceVar(&f.ignore, "ignore", nil, "check codes or names to leave out, comma-separated (for example NK202,kube-api-qps-low)")
	fs.IntVar(&f.maxPerRule, "max-per-check", 20, "resources listed per check in text output (-1 = all)")
}

func (f *reportFlags) validate() error {
	switch f.output {
	case "text", "json", "junit":
	default:
		return fmt.Errorf("unknown output format %q (want text, json or junit)", f.output)
	}
	switch f.color {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("unknown --color %q (want auto, always or never)", f.color)
	}
	for _, c := range f.ignore {
		if _, ok := findings.LookupRule(c); !ok {
			return fmt.Errorf("--ignore %q: no such check code or name", c)
		}
	}
	return nil
}

func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// finish filters, prints and turns the report's highest severity into the exit code.
func (f *reportFlags) finish(cmd *cobra.Command, rep *findings.Report) error {
	if err := rep.Ignore(f.ignore); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if err := findings.Print(out, rep, f.output, findings.PrintOptions{Color: useColor(f.color, out), MaxPerRule: f.maxPerRule}); err != nil {
		return err
	}
	max := rep.MaxSeverity()
	if code := findings.ExitCode(max); code != 0 {
		n := 0
		for _, fd := range rep.Findings() {
			if fd.Severity >= findings.Warning {
				n++
			}
		}
		return withExitCode(code, fmt.Errorf("%s: %d findings at warning or error (highest: %s)", rep.Tool, n, max))
	}
	return nil
}

func newBundleCmd() *cobra.Command {
	var (
		rf         reportFlags
		o          bundle.Options
		minCNI     string
		ioDelay    time.Duration
		maxMember  int64
		maxTotal   int64
		maxMembers int
		userData   string
	)
	cmd := &cobra.Command{
		Use:   "bundle FILE.tar.gz|DIR|KUBELET-JOURNAL",
		Short: "Check an EKS logs collector bundle for the causes of pods stuck at scale",
		Long: `bundle reads an EKS logs collector bundle (eks-log-collector.sh output) in place, without
extracting it, and reports: "pull QPS exceeded", lease and node status errors in the kubelet log;
ipamd that is unreachable (127.0.0.1:50051, ipamd.sock) or cannot reach the API server; EC2 API
throttling; processes delayed by block IO; user data that overrides the hostname, flushes iptables
or manages Docker on a containerd node; the kubelet configuration (registryPullQPS, maxPods against
the instance type's VPC CNI addresses) and the aws-node settings.

The input is the collector's .tar.gz, the directory it unpacks to, or a kubelet journal
(journalctl -u kubelet output, gzip-compressed or not; only the kubelet log checks run on it).
--user-data FILE adds the node's EC2 user data (a shell script, MIME multi-part or an AL2023
NodeConfig): the bootstrap checks run on its commands even when cloud-init-output.log does not
show them, and its kubelet settings are used when the input has no kubelet configuration.

Exit codes: 0 no warning, 2 warnings, 3 errors, 1 the bundle could not be read (a hostile or
malformed archive is refused with a clear error).`,
		Example: `  nodekeeper bundle eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8.tar.gz
  nodekeeper bundle node.tar.gz --instance-type m5.large -o junit > bundle.xml
  nodekeeper bundle eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8/ --user-data user-data.mime
  journalctl -u kubelet > kubelet.journal; nodekeeper bundle kubelet.journal --user-data nodeconfig.yaml --instance-type m5.large`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.validate(); err != nil {
				return err
			}
			if minCNI != "" {
				v, err := eni.ParseVersion(minCNI)
				if err != nil {
					return fmt.Errorf("--min-cni-version: %w", err)
				}
				o.MinCNIVersion = v
			}
			if o.InstanceType != "" {
				if _, err := eni.Lookup(o.InstanceType); err != nil {
					return fmt.Errorf("--instance-type: %w", err)
				}
			}
			if o.ReservedENIs < 0 {
				return fmt.Errorf("--reserved-enis must not be negative")
			}
			o.IODelayThreshold = ioDelay
			o.Limits = bundle.Limits{MaxMemberSize: maxMember, MaxTotalSize: maxTotal, MaxMembers: maxMembers}
			if userData != "" {
				data, err := readUserDataFile(userData)
				if err != nil {
					return err
				}
				o.UserData, o.UserDataName = data, filepath.Base(userData)
			}
			start := time.Now()
			rep, err := bundle.AnalyzeFile(args[0], o)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			rep.Duration = time.Since(start)
			return rf.finish(cmd, rep)
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.StringVar(&o.InstanceType, "instance-type", "", "instance type of the node (default: from ipamd.log)")
	f.IntVar(&o.ReservedENIs, "reserved-enis", 0, "ENIs kept from pods besides custom networking and the trunk ENI")
	f.StringVar(&minCNI, "min-cni-version", "", "warn about VPC CNI versions older than this (default "+bundleDefaultMinCNI()+")")
	f.DurationVar(&ioDelay, "io-delay-threshold", bundle.DefaultIODelayThreshold, "report processes that waited this long for block IO")
	f.Int64Var(&maxMember, "max-member-size", bundle.DefaultMaxMemberSize, "refuse members larger than this many bytes")
	f.Int64Var(&maxTotal, "max-total-size", bundle.DefaultMaxTotalSize, "refuse archives that inflate past this many bytes")
	f.IntVar(&maxMembers, "max-members", bundle.DefaultMaxMembers, "refuse archives with more members")
	f.StringVar(&userData, "user-data", "", "the node's EC2 user data: shell script, MIME multi-part or AL2023 NodeConfig")
	return cmd
}

// readUserDataFile reads --user-data, refusing anything but a regular file of at most
// bundle.MaxUserDataSize bytes.
func readUserDataFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--user-data: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--user-data %s: not a regular file", name)
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

func bundleDefaultMinCNI() string { return doctorDefaultMinCNI() }
