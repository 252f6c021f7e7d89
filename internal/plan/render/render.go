// Package render prints a plan (internal/plan) as text, JSON, YAML and one self-contained HTML
// page. Names read from the cluster, AWS or a scenario file are text written by others: the text
// printer passes them through textsafe, the page through html/template.
package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// Kind is the kind of the JSON and YAML document (docs/schemas/plan.schema.json).
const Kind = "Plan"

type fields plan.Result

// JSON is the document: apiVersion, kind, then the result.
func JSON(r *plan.Result) ([]byte, error) {
	return typemeta.Marshal(Kind, (*fields)(r))
}

// WriteJSON writes the document and a newline.
func WriteJSON(w io.Writer, r *plan.Result) error {
	b, err := JSON(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteYAML writes the same document as YAML.
func WriteYAML(w io.Writer, r *plan.Result) error {
	b, err := JSON(r)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// Section titles of the text report (and of the page).
const (
	TitleVerdict = "Verdict"
	TitleLimits  = "Limits, first to fail first"
	TitleGroups  = "Node groups"
	TitleSubnets = "Subnets"
	TitleNotes   = "Notes"
)

func esc(s string) string { return textsafe.Escape(s) }

// fitText writes a limit's node count for people.
func fitText(l *plan.Limit) string {
	switch {
	case l == nil:
		return "-"
	case l.Status == plan.StatusUnknown:
		return "unknown"
	case l.Status == plan.StatusBreaks && l.Kind == plan.KindDelay:
		return fmt.Sprintf("waits from node %d", l.BreaksAt)
	case l.Status == plan.StatusBreaks:
		return fmt.Sprintf("fails at node %d", l.BreaksAt)
	case l.NodesFit < 0:
		return "fits, no bound"
	}
	return fmt.Sprintf("fits, reached at node %d", l.NodesFit+1)
}

// Verdict is the one-line answer for a plan: the first failure when one breaks (a delay that
// breaks sooner is told apart, on its own line: DelayLines), else the first delay past its bound.
func Verdict(p *plan.Plan) string {
	if p.Fits {
		return fmt.Sprintf("FITS: %d new nodes stay within every limit that could be read", p.Add)
	}
	l := p.Limit(p.FirstToBreak)
	where := ""
	if l.Where != "" {
		where = " (" + l.Where + ")"
	}
	if l.Kind == plan.KindDelay {
		return fmt.Sprintf("DELAYED: no limit fails within %d new nodes, but %s wait past their bound from new node %d%s", p.Add, plan.LowerFirst(l.Title), l.BreaksAt, where)
	}
	return fmt.Sprintf("DOES NOT FIT: the first limit to fail is %s, at new node %d of %d%s", plan.LowerFirst(l.Title), l.BreaksAt, p.Add, where)
}

// DelayLines are the plan's delays, one line each with the seconds it adds at the plan's size.
func DelayLines(p *plan.Plan) []string {
	var out []string
	for _, d := range p.Delays {
		switch {
		case d.ID == plan.LimitPulls && d.Seconds > 0:
			out = append(out, fmt.Sprintf("delay: image pulls: the kubelet refuses pulls over registryBurst and retries them with back-off: a new node's last pull starts %s after its first", secondsText(d.Seconds)))
		case d.ID == plan.LimitEC2 && d.Seconds > 0:
			out = append(out, fmt.Sprintf("delay: EC2 API calls: ipamd's calls wait for the EC2 bucket's refill: every new node's addresses after %s", secondsText(d.Seconds)))
		case d.Seconds > 0:
			out = append(out, fmt.Sprintf("delay: %s: %s", plan.LowerFirst(d.Title), secondsText(d.Seconds)))
		default:
			out = append(out, fmt.Sprintf("delay: %s: none at %d new nodes", plan.LowerFirst(d.Title), p.Add))
		}
	}
	return out
}

// WriteText writes the report for people: the verdict and the fix of the first limit to break,
// the limits (today's and the what-if's side by side), the node groups and the subnets.
func WriteText(w io.Writer, r *plan.Result) error {
	var b strings.Builder
	p := r.Today
	fmt.Fprintf(&b, "nodekeeper plan: add %s\n", groupsText(p))
	fmt.Fprintf(&b, "aws-node today: %s%s\n", p.Mode, settingsText(p.Settings))
	if r.WhatIf != nil {
		fmt.Fprintf(&b, "what-if: %s%s\n", r.WhatIf.Mode, settingsText(r.WhatIf.Settings))
	}
	fmt.Fprintf(&b, "\n%s\n", TitleVerdict)
	verdict := func(label string, p *plan.Plan) {
		fmt.Fprintf(&b, "  %s%s\n", label, esc(Verdict(p)))
		for _, d := range DelayLines(p) {
			fmt.Fprintf(&b, "    %s\n", esc(d))
		}
		if l := p.Limit(p.FirstToBreak); l != nil {
			fmt.Fprintf(&b, "    %s\n", esc(l.Detail))
			if l.Fix != nil {
				fmt.Fprintf(&b, "    fix: %s%s\n", esc(l.Fix.Text), movesText(l.Fix))
			}
			for _, a := range l.Alternatives {
				fmt.Fprintf(&b, "    or: %s%s\n", esc(a.Text), movesText(&a))
			}
		}
	}
	if r.WhatIf != nil {
		verdict("today: ", p)
		verdict("with "+changesText(r.Changes)+": ", r.WhatIf)
	} else {
		verdict("", p)
	}

	fmt.Fprintf(&b, "\n%s\n", TitleLimits)
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	if r.WhatIf != nil {
		fmt.Fprintf(tw, "  LIMIT\tTODAY\tWITH %s\tWHERE\n", esc(changesText(r.Changes)))
	} else {
		fmt.Fprintf(tw, "  LIMIT\tNODES\tWHERE\n")
	}
	for i := range p.Limits {
		l := &p.Limits[i]
		if r.WhatIf != nil {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l.Title, fitText(l), fitText(r.WhatIf.Limit(l.ID)), esc(l.Where))
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Title, fitText(l), esc(l.Where))
		}
	}
	tw.Flush()
	for i := range p.Limits {
		l := &p.Limits[i]
		fmt.Fprintf(&b, "  %s: %s\n", l.Title, esc(l.Detail))
		for _, n := range l.Notes {
			fmt.Fprintf(&b, "    note: %s\n", esc(n))
		}
		if l.Fix != nil && l.ID != p.FirstToBreak {
			fmt.Fprintf(&b, "    fix: %s%s\n", esc(l.Fix.Text), movesText(l.Fix))
		}
	}

	fmt.Fprintf(&b, "\n%s\n", TitleGroups)
	tw = tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  GROUP\tTYPE\tADD\tPODS/NODE\tMAXPODS\tADDRESS CAPACITY\tENIS\tADDRESSES HELD\tNODE SUBNET\tPOD SUBNET\tEC2 CALLS\tPULLS\n")
	for _, g := range p.Groups {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", esc(g.Name), esc(g.InstanceType), g.Add, g.PodsPerNode, g.MaxPods,
			g.AddressCapacity, g.Holding.ENIs, g.Holding.Addresses, g.Holding.NodeSubnet, g.Holding.PodSubnet, g.Holding.EC2Calls, g.PullsPerNode)
	}
	tw.Flush()
	for _, g := range p.Groups {
		fmt.Fprintf(&b, "  %s: holds %s; maxPods from %s; pull limits from %s\n", esc(g.Name), esc(g.Holding.Why), esc(g.MaxPodsSource), esc(g.Kubelet.Source))
	}
	if len(p.Subnets) > 0 {
		fmt.Fprintf(&b, "\n%s\n", TitleSubnets)
		tw = tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "  SUBNET\tZONE\tCIDR\tFREE\tNEW NODES\tTAKEN\tLEFT\n")
		for _, s := range p.Subnets {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\n", esc(s.ID), esc(s.Zone), esc(s.CIDR), s.Free, s.Nodes, s.Taken, s.Left)
		}
		tw.Flush()
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(&b, "\n%s\n", TitleNotes)
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", esc(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func movesText(f *plan.Fix) string {
	s := fmt.Sprintf(" (then %d nodes fit", f.NodesFit)
	if f.NodesFit < 0 {
		s = " (removes the bound"
	}
	if f.Next != "" {
		s += "; " + esc(f.Next)
	}
	return s + ")"
}

func groupsText(p *plan.Plan) string {
	var parts []string
	for _, g := range p.Groups {
		parts = append(parts, fmt.Sprintf("%d %s to %s", g.Add, esc(g.InstanceType), esc(g.Name)))
	}
	return strings.Join(parts, ", ")
}

func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return ""
	}
	return " (" + esc(changesText(s)) + ")"
}

func changesText(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == "" {
			parts = append(parts, k+" unset")
		} else {
			parts = append(parts, k+"="+m[k])
		}
	}
	return strings.Join(parts, " ")
}

func secondsText(s float64) string {
	if s < 120 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.0fm%02.0fs", float64(int(s)/60), float64(int(s)%60))
}
