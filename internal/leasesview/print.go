package leasesview

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Output formats accepted by -o.
const (
	FormatTable = ""
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// Formats lists the -o values, for help text and completion: the tables' and report's own, then
// kubectl's object formats.
func Formats() []string {
	return append([]string{FormatWide, FormatJSON, FormatYAML}, kubeprint.ObjectFormats()...)
}

// ValidateFormat rejects an unknown -o value.
func ValidateFormat(f string) error {
	switch f {
	case FormatTable, FormatWide, FormatJSON, FormatYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q (want one of: %s…)", f, strings.Join(Formats(), ", "))
}

// PrintOptions control how a report is printed.
type PrintOptions struct {
	Format string
	// NoHeaders drops column headers and the summary, for scripts (like kubectl --no-headers).
	NoHeaders bool
	// AllNamespaces adds the NAMESPACE column (kubectl prints it only when listing across namespaces).
	AllNamespaces bool
	// NodeColumns are appended to the node lease table (leases --aws: InstanceColumns).
	NodeColumns []NodeColumn
	// ShowKind prints lease names as lease.coordination.k8s.io/NAME (kubectl --show-kind).
	ShowKind bool
}

const none = "<none>"

// Print writes r in the chosen format. Tables are split by kind of lease because each kind has
// its own facts (node and owner for heartbeats, transitions for leader locks, liveness for API
// server identities); the tables come in class order, so the whole output is sorted by class,
// then name, as a single table would be. Ages are relative to r.GeneratedAt, never to the wall
// clock, so the same report always prints the same way.
func Print(w io.Writer, r *Report, o PrintOptions) error {
	switch o.Format {
	case FormatJSON:
		return writeJSON(w, r)
	case FormatYAML:
		return writeYAML(w, r)
	case FormatTable, FormatWide:
	default:
		return ValidateFormat(o.Format)
	}
	now := r.GeneratedAt.Time
	wide := o.Format == FormatWide
	tables := 0
	table := func(rows int, header []string, row func(i int) (string, []string)) error {
		if rows == 0 {
			return nil
		}
		if tables > 0 && !o.NoHeaders {
			// A blank line between tables, but none in --no-headers output meant for scripts.
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		tables++
		withNS := func(ns string, cells []string) []string {
			if !o.AllNamespaces {
				return cells
			}
			return append([]string{ns}, cells...)
		}
		n, first := rows, 0
		if !o.NoHeaders {
			n, first = rows+1, 1
		}
		return writeAligned(w, n, func(i int) []string {
			if i < first {
				return withNS("NAMESPACE", header)
			}
			ns, cells := row(i - first)
			return withNS(ns, cells)
		})
	}
	for _, sec := range sections {
		var idx []int
		for i := range r.Items {
			if sectionOf(r.Items[i].Class) == sec.kind {
				idx = append(idx, i)
			}
		}
		header, extra := sec.header(wide), []NodeColumn(nil)
		if sec.kind == kindNode {
			extra = o.NodeColumns
		}
		for _, c := range extra {
			header = append(header, c.Header)
		}
		err := table(len(idx), header, func(i int) (string, []string) {
			it := &r.Items[idx[i]]
			cells := sec.row(it, now, wide)
			cells[0] = kubeprint.Name(cells[0], o.ShowKind)
			for _, c := range extra {
				cells = append(cells, cleanCell(c.Cell(it, now)))
			}
			return it.Namespace, cells
		})
		if err != nil {
			return err
		}
	}
	candidates := 0
	if showCandidates(r) {
		candidates = len(r.LeaseCandidates)
	}
	err := table(candidates, []string{"LEASECANDIDATE", "LEASE", "BINARY", "EMULATION", "STRATEGY", "RENEWED", "PINGED"}, func(i int) (string, []string) {
		c := &r.LeaseCandidates[i]
		return c.Namespace, []string{c.Name, c.LeaseName, orNone(c.BinaryVersion),
			orNone(c.EmulationVersion), orNone(c.Strategy), ago(c.RenewTime, now), ago(c.PingTime, now)}
	})
	if err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	if len(r.Items) == 0 {
		scope := "in any namespace"
		if r.Namespace != "" {
			scope = "in namespace " + textsafe.Escape(r.Namespace)
		}
		if _, err := fmt.Fprintf(w, "No leases %s%s.\n", matchNote(r), scope); err != nil {
			return err
		}
	}
	return PrintSummary(w, r)
}

// showCandidates: LeaseCandidates belong with leader locks; a --class filter without leader hides them.
func showCandidates(r *Report) bool {
	if len(r.ClassFilter) == 0 {
		return true
	}
	for _, c := range r.ClassFilter {
		if c == lease.Leader {
			return true
		}
	}
	return false
}

func matchNote(r *Report) string {
	if len(r.ClassFilter) > 0 {
		return "of class " + joinClasses(r.ClassFilter, ",") + " "
	}
	return ""
}

func joinClasses(cs []lease.Class, sep string) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, sep)
}

// PrintSummary writes the summary block: counts by class (leaked and zombie always, other classes
// when present), API server liveness, and one line per class that needs attention.
func PrintSummary(w io.Writer, r *Report) error {
	var b strings.Builder
	s := r.Summary
	b.WriteString("\nSummary: ")
	var parts []string
	for _, cc := range s.Counts {
		if cc.Count > 0 || cc.Class == lease.Leaked || cc.Class == lease.Zombie {
			parts = append(parts, fmt.Sprintf("%d %s", cc.Count, cc.Class))
		}
	}
	b.WriteString(strings.Join(parts, ", "))
	fmt.Fprintf(&b, " (%d %s", s.Total, plural(s.Total, "lease", "leases"))
	if len(r.ClassFilter) > 0 {
		fmt.Fprintf(&b, ", %d shown by --class %s", s.Shown, joinClasses(r.ClassFilter, ","))
	}
	b.WriteString(")\n")
	if a := s.APIServers; a != nil {
		fmt.Fprintf(&b, "API servers: %d live", a.Live)
		if a.Stale > 0 {
			fmt.Fprintf(&b, ", %d stale %s (%s); kube-apiserver deletes stale identities itself, hourly",
				a.Stale, plural(a.Stale, "identity", "identities"), textsafe.Escape(strings.Join(a.StaleIdentities, ", ")))
		} else {
			b.WriteString(", no stale identity")
		}
		b.WriteString("\n")
	}
	for _, cc := range s.Counts {
		if cc.Explanation != "" {
			fmt.Fprintf(&b, "  %s: %s\n", cc.Class, cc.Explanation)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
