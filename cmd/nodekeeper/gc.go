package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/gc"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Exit codes of `nodekeeper gc`.
const (
	gcExitError     = 1 // nothing was deleted: the listing or a setting failed
	gcExitUsage     = 2 // bad flags
	gcExitAborted   = 3 // not confirmed: nothing was deleted
	gcExitPartial   = 4 // some deletes failed with API errors (safety skips are not failures)
	gcExitCancelled = 5 // interrupted (Ctrl-C) part way
)

func init() { rootCmd.AddCommand(newGCCmd()) }

func newGCCmd() *cobra.Command {
	var (
		grace    time.Duration
		dryRun   bool
		yes      bool
		workers  int
		qps      float32
		burst    int
		output   string
		progress string
	)
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

Exit codes: 0 done (or nothing to do, or dry run); 1 error before any delete; 2 bad flags;
3 not confirmed; 4 some deletes failed; 5 interrupted.`,
		Example: `  # see what would be deleted
  nodekeeper gc --dry-run

  # delete, without a prompt, as fast as the API server allows
  nodekeeper gc --yes --qps 0

  # machine-readable report
  nodekeeper gc --yes -o json > gc-report.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace <= 0 {
				return withExitCode(gcExitUsage, fmt.Errorf("--grace-period must be positive, got %s", grace))
			}
			if qps < 0 || burst < 0 || workers < 1 {
				return withExitCode(gcExitUsage, errors.New("--qps and --burst must not be negative and --workers must be at least 1"))
			}
			switch output {
			case "table", "json", "yaml":
			default:
				return withExitCode(gcExitUsage, fmt.Errorf("unknown output format %q (want table, json or yaml)", output))
			}
			stderr := cmd.ErrOrStderr()
			showProgress, err := wantProgress(progress, stderr)
			if err != nil {
				return withExitCode(gcExitUsage, err)
			}

			cfg, err := kubeFlags.ToRESTConfig()
			if err != nil {
				return withExitCode(gcExitError, err)
			}
			cfg = rest.CopyConfig(cfg)
			cfg.QPS, cfg.Burst = qps, burst
			if qps == 0 {
				cfg.QPS = -1 // client-go reads 0 as its default of 5; here it means "no limit"
			}
			cfg.UserAgent = "nodekeeper-gc/" + version
			leases, err := kubernetes.NewForConfig(deleter.ProtobufConfig(cfg))
			if err != nil {
				return withExitCode(gcExitError, err)
			}
			nodes, err := metadata.NewForConfig(cfg)
			if err != nil {
				return withExitCode(gcExitError, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()

			plan, err := gc.List(ctx, leases.CoordinationV1(), nodes, gc.ListOptions{GracePeriod: grace})
			if err != nil {
				return withExitCode(gcExitError, err)
			}
			out := cmd.OutOrStdout()
			summaryTo := out
			if output != "table" {
				summaryTo = stderr // stdout carries only the report
			}
			gc.PrintPlan(summaryTo, plan, dryRun)

			n := len(plan.Leaked())
			if n == 0 {
				return gc.WriteReport(out, output, plan, &gc.Report{Counts: map[deleter.Outcome]int{}}, dryRun)
			}
			if !dryRun && !yes {
				ok, err := confirm(cmd.InOrStdin(), stderr, n)
				if err != nil {
					return withExitCode(gcExitAborted, err)
				}
				if !ok {
					return withExitCode(gcExitAborted, errors.New("not confirmed; nothing deleted"))
				}
			}
			// Concurrent deletes share their live Node reads (one consistent LIST started after
			// all the checks it answers) instead of sending one GET per lease.
			checker := deleter.NewBatchNodeChecker(nodes)
			d, err := deleter.New(leases.CoordinationV1(), nodes, deleter.Options{
				Classify: lease.Options{GracePeriod: grace}, DryRun: dryRun, NodeChecker: checker,
			})
			if err != nil {
				return withExitCode(gcExitError, err)
			}
			opts := gc.CollectOptions{Workers: workers}
			if showProgress {
				opts.Progress = terminalProgress(stderr, time.Now())
			}
			report, collectErr := gc.Collect(ctx, d, plan, opts)
			report.Requests += checker.Requests()
			if showProgress {
				fmt.Fprintln(stderr)
			}
			if err := gc.WriteReport(out, output, plan, report, dryRun); err != nil {
				return withExitCode(gcExitError, err)
			}
			switch {
			case collectErr != nil:
				return withExitCode(gcExitCancelled, collectErr)
			case report.Failed() > 0:
				return withExitCode(gcExitPartial, fmt.Errorf("%d of %d deletes failed", report.Failed(), n))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&grace, "grace-period", lease.DefaultGracePeriod, "how long an ownerless lease without a Node must go unrenewed to be leaked")
	f.BoolVar(&dryRun, "dry-run", false, "classify and check each leaked lease's Node, delete nothing")
	f.BoolVarP(&yes, "yes", "y", false, "delete without asking for confirmation")
	f.IntVar(&workers, "workers", gc.DefaultWorkers, "leases processed at once (each waits for its shared live Node check, then deletes)")
	f.Float32Var(&qps, "qps", 100, "client-side rate limit in requests per second (0: no limit)")
	f.IntVar(&burst, "burst", 200, "client-side burst")
	f.StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	f.StringVar(&progress, "progress", "auto", "progress line on stderr: auto (when stderr is a terminal), always or never")
	return cmd
}

func wantProgress(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		f, ok := w.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())), nil
	}
	return false, fmt.Errorf("unknown --progress %q (want auto, always or never)", mode)
}

func confirm(in io.Reader, out io.Writer, n int) (bool, error) {
	if f, ok := in.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return false, errors.New("refusing to delete without confirmation: stdin is not a terminal; pass --yes (or --dry-run)")
	}
	fmt.Fprintf(out, "Delete %d leaked leases? [y/N] ", n)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

func terminalProgress(w io.Writer, start time.Time) gc.Progress {
	return func(done, total int, counts map[deleter.Outcome]int) {
		rate := float64(done) / max(time.Since(start).Seconds(), 1e-3)
		kept := counts[deleter.PreconditionFailed] + counts[deleter.NodeExists] + counts[deleter.NotLeaked] + counts[deleter.Gone]
		fmt.Fprintf(w, "\r%d/%d leases (%.0f/s): %d deleted, %d kept by a safety check, %d failed   ",
			done, total, rate, counts[deleter.Deleted]+counts[deleter.WouldDelete], kept, counts[deleter.Failed])
	}
}
