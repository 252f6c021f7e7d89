package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/gc"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/progress"
)

// Exit codes of `nodekeeper gc`: the common ones (docs/exit-codes.md) and gc's own from 4 up.
// 3 means "findings" for the commands that grade what they find, so gc does not use it; until
// this scheme, 3 was "not confirmed".
const (
	gcExitError     = cli.ExitFailed // nothing was deleted: the listing or a setting failed
	gcExitUsage     = cli.ExitUsage  // bad flags, or nobody to confirm: no terminal and no --yes
	gcExitPartial   = 4              // some deletes failed with API errors (safety skips are not failures)
	gcExitCancelled = 5              // interrupted (Ctrl-C) part way
	gcExitDeclined  = 6              // answered no at the prompt: nothing was deleted
)

// gcOptions are the settings of `nodekeeper gc`.
type gcOptions struct {
	g *globalOptions

	grace    time.Duration
	dryRun   bool
	yes      bool
	workers  int
	client   *kube.Options
	output   *gc.OutputFlags
	sel      gc.Selection
	progress string

	showProgress bool // from progress and the terminal, set by Complete
}

func newGCCommand(g *globalOptions) *cobra.Command {
	o := &gcOptions{g: g, client: kube.NewOptions(g.kube, "gc", gc.DefaultRateLimit), output: gc.NewOutputFlags()}
	o.client.ChunkSize = gc.DefaultChunkSize
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete leaked node leases once, safely and fast (the kubectl | jq | xargs one-liner done right)",
		Long: `Lists every lease in kube-node-lease and every Node, classifies the leases, prints how many
there are of each class, asks for confirmation and deletes the leaked ones in parallel.

A lease is leaked when no Node has its name, it has no ownerReference, it is held by a kubelet
of its own name, and it has not been renewed for longer than --grace-period. Each delete follows
the controller's safety rules: a live read of the API server started after the decision must find
no Node of that name (concurrent deletes share one consistent LIST of Node names instead of a GET
each), and the DELETE carries the lease's UID and resourceVersion, so a lease renewed, adopted or
re-created since the listing is kept (reported as precondition-failed). Zombie leases (renewed by a kubelet whose Node is gone)
are never deleted.

--limit N deletes at most N leaked leases, those idle longest first (the same N for the same
cluster state); --name-regexp deletes only leaked leases whose whole name matches. The run ends
with what it deleted and what it left, grouped by reason. -o name, jsonpath=…, go-template=… and
custom-columns=… print the deleted leases (dry run: those that would be) as kubectl prints them.

Exit codes (docs/exit-codes.md): 0 done (or nothing to do, or dry run); 1 error before any
delete; 2 bad usage, including no terminal to confirm on and no --yes; 4 some deletes failed;
5 interrupted; 6 answered no at the prompt.`,
		Example: `  # see what would be deleted
  nodekeeper gc --dry-run

  # delete, without a prompt, as fast as the API server allows (the defaults)
  nodekeeper gc --yes

  # a canary: the 10 leases idle longest, then the deleted names as kubectl delete -o name prints them
  nodekeeper gc --yes --limit 10 -o name

  # one subnet's leases only (the expression must match the whole name)
  nodekeeper gc --dry-run --name-regexp 'ip-10-0-1-.*\.ec2\.internal'

  # machine-readable report
  nodekeeper gc --yes -o json > gc-report.json`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(append([]string{"table", "json", "yaml"}, kubeprint.ObjectFormats()...), cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	g.addKubeFlags(cmd)
	return cmd
}

func (o *gcOptions) AddFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.grace, "grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed to be leaked")
	f.BoolVar(&o.dryRun, "dry-run", false, "classify and check each leaked lease's Node, delete nothing")
	f.BoolVarP(&o.yes, "yes", "y", false, "delete without asking for confirmation")
	f.IntVar(&o.workers, "workers", gc.DefaultWorkers, "leases processed at once (each takes its live Node check, read ahead of the deletes, then deletes)")
	o.client.AddFlags(f)
	o.output.AddFlags(f)
	o.sel.AddFlags(f)
	f.StringVar(&o.progress, "progress", string(progress.Auto), progress.FlagUsage)
}

// Validate refuses bad flags with exit code 2.
func (o *gcOptions) Validate() error {
	if o.grace <= 0 {
		return cli.WithExitCode(gcExitUsage, fmt.Errorf("--grace-period must be positive, got %s", o.grace))
	}
	if o.workers < 1 {
		return cli.WithExitCode(gcExitUsage, errors.New("--workers must be at least 1"))
	}
	if err := o.client.Validate(); err != nil {
		return cli.WithExitCode(gcExitUsage, err)
	}
	if err := o.output.Validate(); err != nil {
		return cli.WithExitCode(gcExitUsage, err)
	}
	if err := o.sel.Validate(); err != nil {
		return cli.WithExitCode(gcExitUsage, err)
	}
	return nil
}

// Complete decides whether to show progress.
func (o *gcOptions) Complete(*cobra.Command, []string) error {
	mode, err := progress.ParseMode(o.progress)
	if err != nil {
		return cli.WithExitCode(gcExitUsage, err)
	}
	o.showProgress = mode.Enabled(o.g.streams.ErrOut)
	return nil
}

// Run lists, classifies, asks and deletes.
func (o *gcOptions) Run(ctx context.Context) error {
	var clients *kube.Clients
	// The kubeconfig may be a pipe (--kubeconfig <(...)): a first Ctrl-C must not wait for it.
	err := interruptible(ctx, func() (err error) { clients, err = o.client.Clients(); return err })
	if err != nil {
		return cli.WithExitCode(gcExitError, err)
	}
	leases, nodes := clients.Kube, clients.Metadata

	plan, err := gc.List(ctx, leases.CoordinationV1(), nodes, gc.ListOptions{Lease: lease.Options{GracePeriod: o.grace}, ChunkSize: o.client.ChunkSize})
	if err != nil {
		return cli.WithExitCode(gcExitError, err)
	}
	if err := plan.Select(o.sel); err != nil {
		return cli.WithExitCode(gcExitUsage, err)
	}
	out, stderr := o.g.streams.Out, o.g.streams.ErrOut
	summaryTo := out
	if o.output.Output != "table" {
		summaryTo = stderr // stdout carries only the report
	}
	gc.PrintPlan(summaryTo, plan, o.dryRun)

	n := len(plan.Leaked())
	if n == 0 {
		return o.writeReport(plan, &gc.Report{Counts: map[deleter.Outcome]int{}})
	}
	if !o.dryRun && !o.yes {
		var ok bool
		// The terminal read does not watch ctx: Ctrl-C at the prompt must still end the run.
		err := interruptible(ctx, func() (err error) { ok, err = confirm(o.g.streams.In, stderr, n); return err })
		if err != nil {
			return err
		}
		if !ok {
			return cli.WithExitCode(gcExitDeclined, errors.New("not confirmed; nothing deleted"))
		}
	}
	// Every lease to delete is judged leaked by now, so the live Node checks start here, in the
	// order of the deletes and a window ahead of them: one consistent LIST per window on a small
	// cluster, GETs on a large one (deleter.PrefetchNodeChecker).
	names := make([]string, n)
	for i, l := range plan.Leaked() {
		names[i] = l.Name
	}
	checker := deleter.NewPrefetchNodeChecker(nodes, names, plan.Nodes, deleter.PrefetchOptions{GetsInFlight: gc.NodeGetsInFlight})
	defer checker.Close()
	maxDeletes := gc.MaxDeletesInFlight
	if !checker.UsesList() {
		maxDeletes -= gc.NodeGetsInFlight // the GETs share the connection's streams
	}
	d, err := deleter.New(leases.CoordinationV1(), nodes, deleter.Options{
		Classify: lease.Options{GracePeriod: o.grace}, DryRun: o.dryRun, NodeChecker: checker,
		MaxWritesInFlight: maxDeletes,
	})
	if err != nil {
		return cli.WithExitCode(gcExitError, err)
	}
	opts := gc.CollectOptions{Workers: o.workers}
	var meter *progress.Meter // nil, drawing nothing, unless progress is shown
	if o.showProgress {
		meter = progress.New(stderr, progress.Always, progress.Options{Unit: "leases", Total: int64(n)})
		opts.Progress = leaseProgress(meter)
	}
	report, collectErr := gc.Collect(ctx, d, plan, opts)
	report.Requests += checker.Requests()
	meter.Finish() // the final line, ended before the report is written
	if err := o.writeReport(plan, report); err != nil {
		return cli.WithExitCode(gcExitError, err)
	}
	switch {
	case collectErr != nil:
		return cli.WithExitCode(gcExitCancelled, collectErr)
	case report.Failed() > 0:
		return cli.WithExitCode(gcExitPartial, fmt.Errorf("%d of %d deletes failed", report.Failed(), n))
	}
	return nil
}

// writeReport prints the run's report on stdout; with an object format, the leases it deleted
// there and its summary on stderr, beside the plan.
func (o *gcOptions) writeReport(plan *gc.Plan, report *gc.Report) error {
	if !o.output.ObjectFormat() {
		return gc.WriteReport(o.g.streams.Out, o.output.Output, plan, report, o.dryRun)
	}
	if err := gc.Summarize(plan, report, o.dryRun).Print(o.g.streams.ErrOut); err != nil {
		return err
	}
	return o.output.PrintLeases(o.g.streams.Out, plan, report)
}

// confirm asks on a terminal whether to delete n leases. Without a terminal nobody can answer:
// that is bad usage (exit 2), fixed by --yes or --dry-run.
func confirm(in io.Reader, out io.Writer, n int) (bool, error) {
	if !progress.IsTerminal(in) {
		return false, cli.UsageError(errors.New("refusing to delete without confirmation: stdin is not a terminal; pass --yes (or --dry-run)"))
	}
	return readAnswer(in, out, n)
}

// readAnswer prints the question and reads a yes or no; anything but y or yes is no.
func readAnswer(in io.Reader, out io.Writer, n int) (bool, error) {
	fmt.Fprintf(out, "Delete %d leaked leases? [y/N] ", n)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, cli.WithExitCode(gcExitError, err)
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// leaseProgress draws gc's deletes on the meter, with the outcomes so far.
func leaseProgress(m *progress.Meter) gc.Progress {
	return func(done, _ int, counts map[deleter.Outcome]int) {
		kept := counts[deleter.PreconditionFailed] + counts[deleter.NodeExists] + counts[deleter.NotLeaked] + counts[deleter.Gone]
		m.Set(int64(done), fmt.Sprintf("%d deleted, %d kept by a safety check, %d failed",
			counts[deleter.Deleted]+counts[deleter.WouldDelete], kept, counts[deleter.Failed]))
	}
}
