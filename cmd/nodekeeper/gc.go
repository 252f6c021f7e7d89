package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

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
			printPlan(summaryTo, plan, dryRun)

			n := len(plan.Leaked())
			if n == 0 {
				return writeReport(out, output, plan, &gc.Report{Counts: map[deleter.Outcome]int{}}, dryRun)
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
			if err := writeReport(out, output, plan, report, dryRun); err != nil {
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

// action is what gc does with a class.
func action(c lease.Class) string {
	switch c {
	case lease.Leaked:
		return "delete"
	case lease.Zombie:
		return "keep (kubelet alive)"
	case lease.Unowned:
		return "keep (the controller adopts)"
	case lease.StaleOwner, lease.OwnerMissing:
		return "keep (garbage collector)"
	}
	return "keep"
}

func printPlan(w io.Writer, p *gc.Plan, dryRun bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tLEASES\tACTION\tMEANING")
	total := 0
	for _, c := range lease.Classes() {
		if c == lease.Leader || c == lease.APIServerIdentity {
			continue // never in kube-node-lease
		}
		total += p.Counts[c]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c, p.Counts[c], action(c), c.Explain())
	}
	tw.Flush()
	n := len(p.Leaked())
	verb := "will be deleted"
	if dryRun {
		verb = "would be deleted (dry run)"
	}
	fmt.Fprintf(w, "\n%d leases in %s, %d Nodes; %d leaked leases %s (grace period %s).\n",
		total, lease.NodeLeaseNamespace, p.Nodes, n, verb, p.GracePeriod)
	if n > 0 {
		oldest := p.Leaked()[0]
		v := lease.Classify(oldest, nil, p.At, lease.Options{GracePeriod: p.GracePeriod})
		fmt.Fprintf(w, "Longest idle: %s, last active %s ago.\n", oldest.Name, p.At.Sub(v.LastActivity).Round(time.Second))
	}
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

// gcReport is the -o json|yaml document.
type gcReport struct {
	DryRun      bool                    `json:"dryRun"`
	GracePeriod string                  `json:"gracePeriod"`
	Nodes       int                     `json:"nodes"`
	Classes     map[lease.Class]int     `json:"classes"`
	Outcomes    map[deleter.Outcome]int `json:"outcomes"`
	Requests    int                     `json:"requests"`
	Seconds     float64                 `json:"durationSeconds"`
	Results     []gc.Result             `json:"results"`
}

func writeReport(w io.Writer, format string, p *gc.Plan, r *gc.Report, dryRun bool) error {
	if format == "table" {
		if len(r.Results) == 0 {
			return nil
		}
		fmt.Fprintf(w, "\n%d leases in %s: ", len(r.Results), r.Duration.Round(time.Millisecond))
		var parts []string
		for _, o := range []deleter.Outcome{deleter.Deleted, deleter.WouldDelete, deleter.PreconditionFailed, deleter.NodeExists, deleter.NotLeaked, deleter.Gone, deleter.Failed} {
			if r.Counts[o] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", r.Counts[o], o))
			}
		}
		fmt.Fprintln(w, strings.Join(parts, ", "))
		shown := 0
		for _, res := range r.Results {
			if res.Outcome == deleter.Deleted || res.Outcome == deleter.WouldDelete {
				continue
			}
			if shown == 20 {
				fmt.Fprintln(w, "  ... (use -o json for every result)")
				break
			}
			fmt.Fprintf(w, "  %s: %s: %s\n", res.Name, res.Outcome, res.Reason)
			shown++
		}
		return nil
	}
	doc := gcReport{DryRun: dryRun, GracePeriod: p.GracePeriod.String(), Nodes: p.Nodes, Classes: p.Counts,
		Outcomes: r.Counts, Requests: r.Requests, Seconds: r.Seconds, Results: r.Results}
	if doc.Results == nil {
		doc.Results = []gc.Result{}
	}
	var b []byte
	var err error
	if format == "yaml" {
		b, err = yaml.Marshal(doc)
	} else {
		b, err = json.MarshalIndent(doc, "", "  ")
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
