package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/audit"
)

func init() { rootCmd.AddCommand(newAuditCmd()) }

func newAuditCmd() *cobra.Command {
	var (
		opts       audit.Options
		output     string
		htmlFile   string
		since      string
		until      string
		zombieMin  time.Duration
		window     time.Duration
		maxLine    int
		workers    int
		top        int
		eventsPerL int
		cw         cloudWatchFlags
	)
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
  nodekeeper audit --cloudwatch --cluster prod --region eu-west-1 --since "2024-04-05 05:00" --until "2024-04-05 12:00"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "text", "json", "yaml":
			default:
				return fmt.Errorf("unknown output format %q (want text, json or yaml)", output)
			}
			var err error
			if opts.Since, err = audit.ParseTimeFlag(since); err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			if opts.Until, err = audit.ParseTimeFlag(until); err != nil {
				return fmt.Errorf("--until: %w", err)
			}
			if !opts.Since.IsZero() && !opts.Until.IsZero() && opts.Until.Before(opts.Since) {
				return fmt.Errorf("--until %s is before --since %s", until, since)
			}
			opts.ZombieMinDuration = zombieMin
			opts.Window = window
			opts.MaxLineSize = maxLine
			opts.Workers = workers
			opts.Top = top
			opts.EventsPerLease = eventsPerL
			if err := cw.validate(cmd.Flags(), args); err != nil {
				return err
			}
			var inputs []audit.Input
			if cw.enabled {
				in, err := cw.input(cmd.Context(), opts.Since, opts.Until, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				inputs = []audit.Input{in}
			} else if len(args) == 0 {
				// Waiting on a terminal for a log that never comes helps nobody.
				if f, ok := cmd.InOrStdin().(*os.File); ok {
					if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
						return fmt.Errorf("no input: name audit log files or directories, or pipe a log to standard input")
					}
				}
			}
			if !cw.enabled {
				if inputs, err = audit.ExpandInputs(args, cmd.InOrStdin()); err != nil {
					return err
				}
			}
			rep, aerr := audit.Analyze(inputs, opts)
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			case "yaml":
				var b []byte
				if b, err = yaml.Marshal(rep); err == nil {
					_, err = out.Write(b)
				}
			default:
				err = audit.WriteText(out, rep)
			}
			if err != nil {
				return err
			}
			if htmlFile != "" {
				f, err := os.Create(htmlFile)
				if err != nil {
					return err
				}
				if err := audit.WriteHTML(f, rep); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if aerr != nil {
				return withExitCode(1, aerr)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	f.StringVar(&htmlFile, "html", "", "also write a self-contained HTML page (timelines, throttling chart) to this file")
	f.StringVar(&opts.Node, "node", "", "report only this node: its deletions, lease, zombie episodes, leaks and requests")
	f.StringVar(&opts.Lease, "lease", "", "report only this lease (NAME or NAMESPACE/NAME)")
	f.StringVar(&opts.User, "user", "", "report only what this user did (e.g. system:node:NAME)")
	f.StringVar(&since, "since", "", "ignore events received before this time (RFC 3339, or 2006-01-02[ 15:04[:05]] UTC)")
	f.StringVar(&until, "until", "", "ignore events received after this time")
	f.IntVar(&top, "top", 10, "rows in the ranked tables")
	f.DurationVar(&zombieMin, "zombie-min-duration", time.Minute, "how long a kubelet must keep calling after its Node's deletion to count as a zombie")
	f.DurationVar(&window, "reorder-window", 5*time.Second, "events out of stageTimestamp order by up to this much are put back in order")
	f.IntVar(&maxLine, "max-line-size", 16<<20, "lines and export records longer than this many bytes are skipped and counted as too-long")
	f.IntVar(&workers, "workers", 0, "parsing goroutines (0: one per CPU)")
	f.IntVar(&eventsPerL, "events-per-lease", 40, "lifecycle events kept per lease (the first and the last half)")
	cw.add(f)
	return cmd
}
