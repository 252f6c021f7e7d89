package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/progress"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// auditOptions are the settings of `nodekeeper audit`.
type auditOptions struct {
	g *globalOptions

	audit      analyze.Options
	output     *outputFlags
	htmlFile   string
	since      string
	until      string
	zombieMin  time.Duration
	window     time.Duration
	maxLine    int
	workers    int
	top        int
	eventsPerL int
	churnN     int
	grace      time.Duration
	renew      time.Duration
	failOn     string
	cw         cloudWatchFlags
	progress   progressFlag

	failOnSeverity findings.Severity // parsed by Validate
	args           []string          // the inputs, set by Complete
	flags          *pflag.FlagSet    // set by Complete, for the flags that need --cloudwatch
}

func newAuditCommand(g *globalOptions) *cobra.Command {
	o := &auditOptions{g: g, cw: cloudWatchFlags{aws: awsFlags{g: g}},
		output: newOutputFlags("text", "output format: text, json or yaml", "text", "json", "yaml")}
	cmd := &cobra.Command{
		Use:   "audit [FILE|DIR|GLOB|-]...",
		Short: "Reconstruct node and lease lifecycles, zombie kubelets and throttling from kube-apiserver audit logs",
		Long: `Read kube-apiserver audit logs and report, for the window they cover:

  - who deleted Nodes, and what followed each deletion (the garbage collector deleting the
    lease, the kubelet's calls answered 404, the lease re-created, the Node back);
  - the lifecycle of every lease: creates, deletes and updates that created it (201);
  - leaks: leases created while their Node was gone, or without an ownerReference where the
    audit level shows the object;
  - zombie kubelets: system:node:<name> calling after Node <name> was deleted, with first and
    last seen, rate, source IPs and instance identity (the EC2 instance ID on EKS);
  - access denied: requests answered 401 or 403, by user (groups summarised), verb,
    resource and object, with counts and first and last time;
  - lease churn: actors that delete node leases which are created again within a minute,
    more than --churn-threshold times (a cleanup script run from a CronJob, a lease garbage
    collector such as Karpenter's), with their count and the etcd writes it cost;
  - heartbeats: each kubelet's lease renewal intervals, gaps and 429s against
    --node-monitor-grace-period, naming the nodes that went without a renewal for the grace
    period (marked NotReady) or came within one --lease-renew-interval of it, and the API
    priority level that throttled them (inferred from the default FlowSchemas: audit events
    do not name it);
  - throttling: 429 responses and APF queue waits by user, user agent, verb and resource,
    over time; top talkers by requests and by latency.

Memory stays bounded whatever the input: no record of any layout is held beyond
--max-line-size, and per-key tables have fixed sizes; when one is reached the report says
which numbers are approximate (BOUNDS; "bounds" in -o json).

Inputs are files, directories (read recursively), globs or - for standard input (the default),
plain or gzip. Accepted layouts: kube-apiserver's JSON lines (audit.k8s.io/v1, any level),
pretty-printed or concatenated events, a JSON array of events, "aws logs filter-log-events"
output, Logs Insights results (get-query-results JSON, console JSON or CSV export) and
CloudWatch Logs subscription payloads (JSON, or base64+gzip lines). Several inputs are merged
in time order whatever order they are given in; the same event read twice counts once.

Lines that are not audit events are counted and reported with their first line numbers; the
run goes on. A broken input (a truncated gzip stream) is reported with its offset after
everything before it was counted, and the command exits 1.

--node, --lease and --user narrow the report, not the analysis: a zombie is still recognised
from another user's deletion of its Node. --since and --until drop events received outside
the window before any analysis.`,
		Example: `  # a day of logs from the control plane host
  nodekeeper audit /var/log/kubernetes/audit/

  # an EKS export, one node, as a page to attach to a ticket
  aws logs filter-log-events --log-group-name /aws/eks/prod/cluster \
    --log-stream-name-prefix kube-apiserver-audit --start-time 1712296800000 > events.json
  nodekeeper audit events.json --node ip-10-29-79-205.ap-northeast-2.compute.internal --html report.html

  # machine-readable
  zcat audit-*.log.gz | nodekeeper audit -o json

  # straight from CloudWatch Logs (EKS control plane logging with audit enabled)
  nodekeeper audit --cloudwatch --eks-cluster prod --region eu-west-1 --since "2024-04-05 05:00" --until "2024-04-05 12:00"`,
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	o.output.RegisterCompletion(cmd)
	o.progress.RegisterCompletion(cmd)
	registerFailOnCompletion(cmd)
	return cmd
}

func (o *auditOptions) AddFlags(f *pflag.FlagSet) {
	o.output.AddFlags(f)
	f.StringVar(&o.htmlFile, "html", "", "also write a self-contained HTML page (timelines, throttling chart) to this file")
	f.StringVar(&o.audit.Node, "node", "", "report only this node: its deletions, lease, zombie episodes, leaks and requests")
	f.StringVar(&o.audit.Lease, "lease", "", "report only this lease (NAME or NAMESPACE/NAME)")
	f.StringVar(&o.audit.User, "user", "", "report only what this user did (e.g. system:node:NAME)")
	f.StringVar(&o.since, "since", "", "ignore events received before this time (RFC 3339, or 2006-01-02[ 15:04[:05]] UTC)")
	f.StringVar(&o.until, "until", "", "ignore events received after this time")
	f.IntVar(&o.top, "top", 10, "rows in the ranked tables")
	f.DurationVar(&o.zombieMin, "zombie-min-duration", time.Minute, "how long a kubelet must keep calling after its Node's deletion to count as a zombie")
	f.DurationVar(&o.window, "reorder-window", 5*time.Second, "events out of stageTimestamp order by up to this much are put back in order")
	f.IntVar(&o.maxLine, "max-line-size", 16<<20, "lines and export records longer than this many bytes are skipped and counted as too-long")
	f.IntVar(&o.workers, "workers", 0, "parsing goroutines (0: one per CPU)")
	f.IntVar(&o.eventsPerL, "events-per-lease", 40, "lifecycle events kept per lease (the first and the last half)")
	f.IntVar(&o.churnN, "churn-threshold", analyze.DefaultChurnThreshold, "name an actor as lease churn when more than this many of its node lease deletions were undone (the lease created again) within a minute")
	f.DurationVar(&o.grace, "node-monitor-grace-period", analyze.DefaultNodeMonitorGracePeriod, "kube-controller-manager's --node-monitor-grace-period: a node whose lease went this long without a renewal was marked NotReady (40s before Kubernetes 1.32)")
	f.DurationVar(&o.renew, "lease-renew-interval", analyze.DefaultLeaseRenewInterval, "the kubelets' lease renew interval (a quarter of nodeLeaseDurationSeconds): a gap within one interval of the grace period is named as near NotReady")
	addFailOnFlag(f, &o.failOn, "none")
	o.cw.AddFlags(f)
	o.progress.AddFlags(f)
}

// Complete takes the inputs, parses the time window and fills audit.Options.
func (o *auditOptions) Complete(cmd *cobra.Command, args []string) error {
	o.args, o.flags = args, cmd.Flags()
	if err := o.progress.Complete(o.g.streams.ErrOut); err != nil {
		return err
	}
	var err error
	if o.audit.Since, err = read.ParseTimeFlag(o.since); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if o.audit.Until, err = read.ParseTimeFlag(o.until); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	o.audit.ZombieMinDuration = o.zombieMin
	o.audit.Window = o.window
	o.audit.MaxLineSize = o.maxLine
	o.audit.Workers = o.workers
	o.audit.Top = o.top
	o.audit.EventsPerLease = o.eventsPerL
	o.audit.ChurnThreshold = o.churnN
	o.audit.NodeMonitorGracePeriod = o.grace
	o.audit.LeaseRenewInterval = o.renew
	return nil
}

// Validate refuses an unknown -o, an empty window and flags that do not go together.
func (o *auditOptions) Validate() error {
	if err := o.output.Validate(); err != nil {
		return err
	}
	var err error
	if o.failOnSeverity, err = findings.ParseFailOn(o.failOn); err != nil {
		return err
	}
	if err := refuseNegative(intFlag("max-line-size", int64(o.maxLine)), intFlag("events-per-lease", int64(o.eventsPerL)),
		intFlag("top", int64(o.top)), intFlag("workers", int64(o.workers)),
		durationFlag("zombie-min-duration", o.zombieMin), durationFlag("reorder-window", o.window)); err != nil {
		return err
	}
	// 0 would fall back to the defaults in the analysis: refused rather than silently replaced.
	if o.churnN < 1 {
		return fmt.Errorf("--churn-threshold must be at least 1 (got %d): an actor is named for more than that many churns, and one delete undone is what a one-off manual delete looks like", o.churnN)
	}
	if o.grace <= 0 || o.renew <= 0 {
		return fmt.Errorf("--node-monitor-grace-period and --lease-renew-interval must be positive (got %s and %s)", o.grace, o.renew)
	}
	if o.renew >= o.grace {
		return fmt.Errorf("--lease-renew-interval %s must be shorter than --node-monitor-grace-period %s", o.renew, o.grace)
	}
	if !o.audit.Since.IsZero() && !o.audit.Until.IsZero() && o.audit.Until.Before(o.audit.Since) {
		return fmt.Errorf("--until %s is before --since %s", o.until, o.since)
	}
	return o.cw.validate(o.flags, o.args)
}

// Run reads the inputs (files, standard input or CloudWatch), analyses them and prints the
// report, and the HTML page with --html.
func (o *auditOptions) Run(ctx context.Context) error {
	args := o.args
	var inputs []read.Input
	in := o.g.streams.In
	if o.cw.enabled {
		cwIn, err := o.cw.input(ctx, o.audit.Since, o.audit.Until, o.g.streams.ErrOut)
		if err != nil {
			return err
		}
		inputs = []read.Input{cwIn}
	} else {
		if len(args) == 0 {
			// Waiting on a terminal for a log that never comes helps nobody.
			if f, ok := in.(*os.File); ok {
				if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
					return cli.UsageError(fmt.Errorf("no input: name audit log files or directories, or pipe a log to standard input"))
				}
			}
		}
		var err error
		if inputs, err = read.ExpandInputs(args, in); err != nil {
			return err
		}
	}
	meter := o.progress.meter(o.g.streams.ErrOut, progress.Options{Bytes: true, Total: read.InputsSize(inputs)})
	opts := o.audit
	if meter != nil {
		opts.Progress = auditProgress(meter)
	}
	// The analysis reads its inputs to the end and does not watch ctx: a first Ctrl-C or SIGTERM
	// must still end the run at once, standard input waiting for a writer included.
	var rep *analyze.Report
	var aerr error
	if err := interruptible(ctx, func() error { rep, aerr = analyze.Analyze(inputs, opts); return nil }); err != nil {
		meter.Finish()
		return err
	}
	meter.Finish() // the final line, ended before the report is written
	if err := o.write(rep); err != nil {
		return err
	}
	if aerr != nil {
		return cli.WithExitCode(cli.ExitFailed, aerr)
	}
	if err := noEvents(rep); err != nil {
		return err
	}
	if max := auditSeverity(rep); findings.ExitCodeAt(max, o.failOnSeverity) != findings.ExitOK {
		return cli.WithExitCode(cli.ExitFindings, fmt.Errorf("audit: findings at --fail-on %s or above (highest: %s): %d zombie kubelets, %d leaked leases, %d nodes over the grace period, %d near it, %d lease churn actors, %d throttled requests, %d denied requests",
			o.failOn, max, len(rep.Zombies), len(rep.Leaks), rep.Heartbeats.OverGrace, rep.Heartbeats.NearGrace, len(rep.LeaseChurn.Actors),
			rep.Throttling.Throttled, rep.AccessDenied.Unauthorized+rep.AccessDenied.Forbidden))
	}
	return nil
}

// auditProgress draws the bytes read (against the inputs' size when known) and the events on
// the meter.
func auditProgress(m *progress.Meter) read.ProgressFunc {
	return func(p read.Progress) { m.Set(p.Bytes, fmt.Sprintf("%d events", p.Events)) }
}

// auditSeverity grades a report for --fail-on: zombie kubelets, leaked leases and nodes that went
// the grace period without a renewal are errors (they are what nodekeeper exists to catch, and
// a node marked NotReady has its pods evicted); lease churn, nodes near the grace period,
// throttled and denied requests are warnings.
func auditSeverity(rep *analyze.Report) findings.Severity {
	switch {
	case len(rep.Zombies) > 0 || len(rep.Leaks) > 0 || rep.Heartbeats.OverGrace > 0:
		return findings.Error
	case len(rep.LeaseChurn.Actors) > 0 || rep.Heartbeats.NearGrace > 0 ||
		rep.Throttling.Throttled > 0 || rep.AccessDenied.Unauthorized+rep.AccessDenied.Forbidden > 0:
		return findings.Warning
	}
	return findings.OK
}

// noEvents is the error for a run that counted no audit event, saying why: a report of nothing
// must not pass for a clean bill of health.
func noEvents(rep *analyze.Report) error {
	t := rep.Totals
	if t.Events > 0 {
		return nil
	}
	var why string
	switch {
	case t.Lines == 0:
		why = "the input is empty"
	case t.OutsideWindow > 0 && t.Bad == 0:
		why = fmt.Sprintf("all %d events were received outside --since/--until", t.OutsideWindow)
	case t.SkippedStages > 0 && t.Bad == 0:
		why = fmt.Sprintf("the %d events are all of the RequestReceived or ResponseStarted stage; the audit policy must log ResponseComplete", t.SkippedStages)
	default:
		why = fmt.Sprintf("none of the %d lines read is a kube-apiserver audit event (%d are not; the report lists the first of them)", t.Lines, t.Bad)
	}
	return cli.WithExitCode(cli.ExitFailed, fmt.Errorf("no audit event to analyse: %s", why))
}

// write prints the report in the -o format and writes the --html page.
func (o *auditOptions) write(rep *analyze.Report) error {
	out := o.g.streams.Out
	var err error
	switch o.output.Output {
	case "json":
		// Streamed a section and a list item at a time: a report of 10 MB is not held three
		// times over in memory (the encoder's document and its indented copy).
		err = rep.WriteJSON(textsafe.NewJSONWriter(out))
	case "yaml":
		var b []byte
		if b, err = yaml.Marshal(rep); err == nil {
			_, err = out.Write(b)
		}
	default:
		err = render.WriteText(out, rep)
	}
	if err != nil || o.htmlFile == "" {
		return err
	}
	return writeHTMLFile(o.htmlFile, func(w io.Writer) error { return render.WriteHTML(w, rep) })
}
