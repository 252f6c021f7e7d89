package app

import (
	"bufio"
	"context"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
)

// leasesOptions are the settings of `nodekeeper leases`.
type leasesOptions struct {
	g *globalOptions

	allNamespaces bool
	output        *leasesview.OutputFlags
	classes       []string
	watch         bool
	client        *kube.Options
	grace         time.Duration
	aws           leasesAWSFlags

	view  leasesview.Options      // set by Complete
	print leasesview.PrintOptions // set by Complete
}

func newLeasesCommand(g *globalOptions) *cobra.Command {
	o := &leasesOptions{g: g, aws: leasesAWSFlags{aws: awsFlags{g: g}}, output: leasesview.NewOutputFlags(),
		client: kube.NewOptions(g.kube, "leases", leasesview.DefaultRateLimit)}
	o.client.ChunkSize = leasesview.DefaultChunkSize
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "List every Lease, classified: node heartbeats, leader locks, API server identities",
		Long: `List the Leases of all namespaces (or of -n NAMESPACE), each classified the way the
nodekeeper controller classifies it: node heartbeat leases in kube-node-lease (healthy, stale,
unowned, stale-owner, owner-missing, zombie, leaked), leader-election locks, kube-apiserver
identity leases and anything else, with LeaseCandidates where the cluster serves that API.

Without -n every namespace is listed (as with -A); -A overrides -n. The summary at the end counts
every listed lease by class, leaked and zombie first, and explains each class that needs
attention. --class narrows the tables, not the summary.

-o json|yaml print nodekeeper's LeaseReport (classified rows and summary); -o name, jsonpath=…,
jsonpath-as-json=…, go-template=… and custom-columns=… print the Lease objects themselves, as
kubectl get lease does. -l selects by the leases' own labels, as kubectl's -l does;
--node-selector by the labels of their Nodes (one node group or NodePool): a lease whose Node is
gone has no labels, so --node-selector leaves out leaked, zombie and owner-missing leases.

--watch prints the listing, then one line per new or deleted lease and per change of class,
holder or expiry, including changes caused by a Node being deleted or by time alone.`,
		Example: `  # every lease in the cluster, classified
  nodekeeper leases

  # only the leases to worry about, with the full reason for each
  nodekeeper leases --class leaked,zombie,owner-missing -o wide

  # one node group's leases, and the names of the leaked ones for a script
  nodekeeper leases --node-selector eks.amazonaws.com/nodegroup=ng-1
  nodekeeper leases --class leaked -o name

  # the same template as kubectl get lease, the same output
  nodekeeper leases -A -o jsonpath='{.items[*].metadata.name}'

  # leader election and API server identities; the API server's lease by its label
  nodekeeper leases -n kube-system
  nodekeeper leases -n kube-system -l apiserver.kubernetes.io/identity=kube-apiserver

  # as a kubectl plugin (kubectl refuses flags before the plugin name)
  kubectl nodekeeper leases --context prod -o json`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	g.addKubeFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("class", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return completeList(leasesview.ClassNames(), toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(leasesview.Formats(), cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	// A label selector is no file name; kubectl offers nothing for -l either.
	_ = cmd.RegisterFlagCompletionFunc("selector", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("node-selector", cobra.NoFileCompletions)
	return cmd
}

func (o *leasesOptions) AddFlags(f *pflag.FlagSet) {
	o.aws.AddFlags(f)
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list leases of every namespace (the default unless -n is given); overrides -n")
	o.output.AddFlags(f)
	f.StringSliceVar(&o.classes, "class", nil, "show only leases of these classes (repeatable or comma-separated): "+strings.Join(leasesview.ClassNames(), ", "))
	f.BoolVarP(&o.watch, "watch", "w", false, "after the listing, stream new and deleted leases and changes of class, holder or expiry")
	o.client.AddFlags(f)
	f.DurationVar(&o.grace, "grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed before it is leaked rather than a zombie")
}

// Complete turns the flags into the view's and the printer's options.
func (o *leasesOptions) Complete(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	if err := o.output.Validate(o.watch); err != nil {
		return err
	}
	if err := o.aws.validate(f, o.watch); err != nil {
		return err
	}
	cls, err := leasesview.ParseClasses(splitList(o.classes))
	if err != nil {
		return err
	}
	ns := ""
	if !o.allNamespaces {
		ns = o.g.kube.Namespace()
	}
	o.view = leasesview.Options{
		Namespace:     ns,
		LabelSelector: o.output.Selector,
		Classes:       cls,
		ChunkSize:     o.client.ChunkSize,
		Lease:         lease.Options{GracePeriod: o.grace},
		// The plain tables print few reasons; -o wide, json, yaml and --watch print them all.
		TableReasons: !o.watch && o.output.Output == leasesview.FormatTable,
	}
	o.print = o.output.PrintOptions()
	o.print.AllNamespaces = ns == ""
	return nil
}

// Validate checks the client flags and the view's options.
func (o *leasesOptions) Validate() error {
	if err := o.client.Validate(); err != nil {
		return err
	}
	return o.view.Validate()
}

// Run lists (and with --watch, follows) the leases.
func (o *leasesOptions) Run(ctx context.Context) error {
	var clients *kube.Clients
	// The kubeconfig may be a pipe (--kubeconfig <(...)): a first Ctrl-C must not wait for it.
	err := interruptible(ctx, func() (err error) { clients, err = o.client.Clients(); return err })
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(o.g.streams.Out, 64<<10)
	defer out.Flush()
	if !o.watch {
		defer listingGC()()
	}
	if o.watch {
		return leasesview.Watch(ctx, clients, o.view, &flushingSink{p: leasesview.NewWatchPrinter(out, o.print), w: out})
	}
	err = o.output.Run(ctx, out, clients, o.view, o.print, func(r *leasesview.Report, popts *leasesview.PrintOptions) error {
		return o.aws.apply(ctx, r, popts)
	})
	if err != nil {
		return err
	}
	return out.Flush()
}

// The garbage collector's settings for one listing (see listingGC).
const (
	listingGCPercent   = 400
	listingMemoryLimit = 512 << 20
)

// listingGC tunes the garbage collector for a one-shot listing, unless GOGC or GOMEMLIMIT says
// otherwise. The listing decodes every lease and Node page and keeps a row per lease until it
// prints: most of the heap is live, so each collection marks nearly all of it, and with the
// default GOGC=100 the heap's growth triggers about ten of them at 10,000 Nodes, a sixth of the
// process's CPU. At 400 the heap may grow to five times what is live between collections (about
// 140 MiB at 10,000 Nodes instead of 100), and the soft limit makes the collector work harder
// rather than let a very large cluster's listing grow past it. The live heap measured at 10,000
// Nodes, about 1.1 KiB a lease, puts 100,000 Nodes' near 120 MiB, well under the limit; only a
// cluster of about four times EKS's largest would near it, where collections come often.
// --watch runs for hours and keeps the defaults. The returned function restores the settings (the tests run commands in-process).
func listingGC() (restore func()) {
	percent, limit := int(-2), int64(-1)
	if os.Getenv("GOGC") == "" {
		percent = debug.SetGCPercent(listingGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(listingMemoryLimit)
	}
	return func() {
		if percent != -2 {
			debug.SetGCPercent(percent)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// splitList accepts both repeated flags and comma-separated values, ignoring empty entries
// ("--class leaked," is a typing slip, not a class).
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// completeList completes the last element of a comma-separated list: "leaked,zo" offers
// "leaked,zombie".
func completeList(all []string, toComplete string) []string {
	prefix, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		prefix, last = toComplete[:i+1], toComplete[i+1:]
	}
	taken := map[string]bool{}
	for _, p := range strings.Split(prefix, ",") {
		taken[p] = true
	}
	var out []string
	for _, c := range all {
		if !taken[c] && strings.HasPrefix(c, last) {
			out = append(out, prefix+c)
		}
	}
	return out
}

// flushingSink flushes the buffered output after every write so that --watch streams.
type flushingSink struct {
	p *leasesview.WatchPrinter
	w *bufio.Writer
}

func (s *flushingSink) Snapshot(r *leasesview.Report) error {
	if err := s.p.Snapshot(r); err != nil {
		return err
	}
	return s.w.Flush()
}

func (s *flushingSink) Change(c *leasesview.Change) error {
	if err := s.p.Change(c); err != nil {
		return err
	}
	return s.w.Flush()
}
