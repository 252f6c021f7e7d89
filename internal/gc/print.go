package gc

import (
	"github.com/nodekeeper/nodekeeper/internal/typemeta"

	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// PrintPlan writes the summary table shown before anything is deleted: leases per class, what gc
// does with each, and how many leaked leases it will (or, dry, would) delete.
func PrintPlan(w io.Writer, p *Plan, dryRun bool) {
	tw := printers.GetNewTabWriter(w) // kubectl's table layout, as every command's text output
	fmt.Fprintln(tw, "CLASS\tLEASES\tACTION\tMEANING")
	total := 0
	for _, c := range lease.Classes() {
		if c == lease.Leader || c == lease.APIServerIdentity {
			continue // never in kube-node-lease
		}
		total += p.Counts[c]
		d := c.Describe()
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c, p.Counts[c], d.Action, d.Explanation)
	}
	tw.Flush()
	n := len(p.Leaked())
	verb := "will be deleted"
	if dryRun {
		verb = "would be deleted (dry run)"
	}
	leaked := n + p.NotSelected + p.OverLimit
	fmt.Fprintf(w, "\n%s in %s, %s; %d leaked", counted(total, "lease"), lease.NodeLeaseNamespace, counted(p.Nodes, "Node"), leaked)
	if p.NotSelected > 0 || p.Selection.NameRegexp != "" {
		fmt.Fprintf(w, ", %d of them named to match --name-regexp", leaked-p.NotSelected)
	}
	if p.OverLimit > 0 {
		fmt.Fprintf(w, ", %d left by --limit %d", p.OverLimit, p.Selection.Limit)
	}
	fmt.Fprintf(w, "; %d %s (grace period %s).\n", n, verb, lease.Setting(p.GracePeriod))
	if n > 0 {
		oldest := p.Leaked()[0]
		v := lease.Classify(oldest, nil, p.At, lease.Options{GracePeriod: p.GracePeriod})
		fmt.Fprintf(w, "Longest idle: %s, last active %s ago.\n", textsafe.Escape(oldest.Name), lease.Elapsed(p.At.Sub(v.LastActivity)))
	}
}

// APIVersion and GCResultKind identify the -o json|yaml document of a run (docs/schemas).
const (
	APIVersion   = typemeta.APIVersion
	GCResultKind = "GCResult"
)

// Document is the -o json|yaml report of a run.
type Document struct {
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	DryRun      bool   `json:"dryRun"`
	GracePeriod string `json:"gracePeriod"`
	// GracePeriodSeconds is GracePeriod in seconds, for readers that do not parse Go durations.
	GracePeriodSeconds float64                 `json:"gracePeriodSeconds"`
	NameRegexp         string                  `json:"nameRegexp,omitempty"`
	Limit              int                     `json:"limit,omitempty"`
	Nodes              int                     `json:"nodes"`
	Classes            map[lease.Class]int     `json:"classes"`
	Outcomes           map[deleter.Outcome]int `json:"outcomes"`
	Requests           int                     `json:"requests"`
	Seconds            float64                 `json:"durationSeconds"`
	Summary            Summary                 `json:"summary"`
	Results            []Result                `json:"results"`
}

// WriteReport writes the outcome of a run: for "table" a line of outcome counts and every lease a
// safety check kept or an error stopped (the first 20); for "json" and "yaml" the whole Document.
func WriteReport(w io.Writer, format string, p *Plan, r *Report, dryRun bool) (err error) {
	if format == "table" {
		defer func() {
			if err == nil {
				fmt.Fprintln(w)
				err = Summarize(p, r, dryRun).Print(w)
			}
		}()
		if len(r.Results) == 0 {
			return nil
		}
		fmt.Fprintf(w, "\n%s in %s: ", counted(len(r.Results), "lease"), r.Duration.Round(time.Millisecond))
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
			// A reason can quote an API error, and so whatever a server or proxy answered.
			fmt.Fprintf(w, "  %s: %s: %s\n", textsafe.Escape(res.Name), res.Outcome, textsafe.Escape(res.Reason))
			shown++
		}
		return nil
	}
	doc := Document{APIVersion: APIVersion, Kind: GCResultKind, DryRun: dryRun,
		GracePeriod: p.GracePeriod.String(), GracePeriodSeconds: p.GracePeriod.Seconds(),
		NameRegexp: p.Selection.NameRegexp, Limit: p.Selection.Limit, Nodes: p.Nodes, Classes: p.Counts,
		Outcomes: r.Counts, Requests: r.Requests, Seconds: r.Seconds, Summary: Summarize(p, r, dryRun), Results: r.Results}
	if doc.Results == nil {
		doc.Results = []Result{}
	}
	var b []byte
	if format == "yaml" {
		b, err = yaml.Marshal(doc)
	} else {
		b, err = json.MarshalIndent(doc, "", "  ")
		b = append(textsafe.AppendJSONEscaped(nil, b), '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// counted is "1 lease", "2 leases": a count with its noun in the right number.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
