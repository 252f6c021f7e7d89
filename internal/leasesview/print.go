package leasesview

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/liggitt/tabwriter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

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

// Column layout of kubectl's tables (k8s.io/cli-runtime/pkg/printers.GetNewTabWriter).
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// writeAligned writes n rows exactly as kubectl's tab writer lays them out — every column but the
// last padded to its widest cell plus three spaces, at least six — but computes the widths in a
// first pass over the rows instead of buffering the whole table: row(i) is called twice per row.
// Every cell goes through cleanCell, so a holder identity cannot reach the terminal raw or break
// the layout.
func writeAligned(w io.Writer, n int, row func(i int) []string) error {
	var widths []int
	for i := 0; i < n; i++ {
		cells := row(i)
		for c := 0; c < len(cells)-1; c++ {
			if c == len(widths) {
				widths = append(widths, tableMinWidth)
			}
			if cw := utf8.RuneCountInString(cleanCell(cells[c])) + tablePadding; cw > widths[c] {
				widths[c] = cw
			}
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := 0; i < n; i++ {
		cells := row(i)
		for c, cell := range cells {
			cell = cleanCell(cell)
			bw.WriteString(cell)
			if c < len(cells)-1 {
				for pad := widths[c] - utf8.RuneCountInString(cell); pad > 0; pad-- {
					bw.WriteByte(' ')
				}
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// cleanCell makes a cell safe for the terminal and for the layout: every field of a Lease or Node
// is written by somebody else (a tenant can put ESC]0;…BEL or ESC[2J into a holderIdentity), so
// control characters, C1 controls, bidirectional overrides and invalid UTF-8 are shown as visible
// escapes, which also keeps a tab or newline from shifting columns or starting a row.
func cleanCell(s string) string { return textsafe.Escape(s) }

func writeRow(w io.Writer, withNS bool, ns string, cells []string) {
	if withNS {
		fmt.Fprint(w, ns, "\t")
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// kind groups classes into the tables they are printed in.
type kind int

const (
	kindNode kind = iota
	kindLeader
	kindAPIServer
	kindOther
)

func sectionOf(c lease.Class) kind {
	switch c {
	case lease.Leader:
		return kindLeader
	case lease.APIServerIdentity:
		return kindAPIServer
	case lease.Other:
		return kindOther
	}
	// Every node class, and any class this package does not know yet (shown rather than lost).
	return kindNode
}

type section struct {
	kind   kind
	header func(wide bool) []string
	row    func(it *Item, now time.Time, wide bool) []string
}

// sections are in class order: node classes (leaked, zombie, ... healthy ...) rank before leader,
// apiserver-identity and other.
var sections = []section{
	{
		kind: kindNode,
		header: func(wide bool) []string {
			h := []string{"NODE LEASE", "CLASS", "NODE", "OWNER", "RENEWED", "MEANING"}
			if wide {
				h = append(h, "HOLDER", "DURATION", "AGE", "CHANGES", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			node := none
			if it.Node != nil {
				node = "uid " + shortUID(it.Node.UID, wide)
			}
			r := []string{it.Name, string(it.Class), node, owners(it.Owners, wide), ago(it.RenewTime, now), it.Class.Describe().Meaning}
			if wide {
				r = append(r, it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), changesIn(it, now), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindLeader,
		header: func(wide bool) []string {
			h := []string{"LEADER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "TRANSITIONS", "ACQUIRED"}
			if wide {
				h = append(h, "DURATION", "AGE", "STRATEGY", "PREFERRED", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			acquired := none
			if it.AcquireTime != nil {
				acquired = age(it.AcquireTime.Time, now)
			}
			r := []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), count(it.Transitions), acquired}
			if wide {
				r = append(r, seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), orNone(it.Strategy), orNone(it.PreferredHolder), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindAPIServer,
		header: func(wide bool) []string {
			h := []string{"APISERVER LEASE", "CLASS", "HOST", "RENEWED", "STATE"}
			if wide {
				h = append(h, "HOLDER", "DURATION", "AGE", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			state := "live"
			if it.Expired {
				state = "stale"
			}
			r := []string{it.Name, string(it.Class), orNone(it.Hostname), ago(it.RenewTime, now), state}
			if wide {
				r = append(r, it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindOther,
		header: func(wide bool) []string {
			h := []string{"OTHER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "REASON"}
			if wide {
				h = append(h, "OWNER", "DURATION", "AGE")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			r := []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), it.Reason}
			if wide {
				r = append(r, owners(it.Owners, wide), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now))
			}
			return r
		},
	},
}

// shortUID abbreviates a UID to its first 8 characters (enough to tell a re-created Node apart)
// except in wide output.
func shortUID(u types.UID, wide bool) string {
	s := string(u)
	if s == "" {
		return none
	}
	if wide {
		return s
	}
	// An ownerReference's UID is written by whoever wrote the Lease: cut on a character boundary.
	n := 0
	for i := range s {
		if n == 8 {
			return s[:i]
		}
		n++
	}
	return s
}

func owners(os []Owner, wide bool) string {
	if len(os) == 0 {
		return none
	}
	parts := make([]string, len(os))
	for i, o := range os {
		if o.Kind == "Node" && o.APIVersion == "v1" {
			parts[i] = "Node uid " + shortUID(o.UID, wide)
		} else {
			parts[i] = o.Kind + "/" + o.Name
		}
	}
	return strings.Join(parts, ",")
}

// ago is the time since a renewal, kubectl-style ("5s", "3h2m"); "<never>" when never renewed and
// "in 10m" when the timestamp is in the future (clock skew).
func ago(t *metav1.MicroTime, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<never>"
	}
	return humanAge(now.Sub(t.Time))
}

func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return humanAge(now.Sub(t))
}

func humanAge(d time.Duration) string {
	if d < 0 {
		return "in " + duration.HumanDuration(-d)
	}
	return duration.HumanDuration(d)
}

// changesIn says when the class changes by the clock alone (healthy → stale, zombie → leaked).
func changesIn(it *Item, now time.Time) string {
	if it.RecheckAt == nil {
		return none
	}
	d := it.RecheckAt.Sub(now)
	if d <= 0 {
		return "now"
	}
	return "in " + duration.HumanDuration(d)
}

func seconds(p *int32) string {
	if p == nil {
		return none
	}
	return fmt.Sprintf("%ds", *p)
}

func count(p *int32) string {
	if p == nil {
		return "0"
	}
	return fmt.Sprint(*p)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// WatchPrinter is the Sink of `leases --watch`: the snapshot as Print prints it, then one line
// (or one JSON/YAML document) per change.
type WatchPrinter struct {
	w       io.Writer
	o       PrintOptions
	tw      *tabwriter.Writer
	headers bool
	docs    int
	json    printers.ResourcePrinter
}

// NewWatchPrinter returns a Sink printing to w.
func NewWatchPrinter(w io.Writer, o PrintOptions) *WatchPrinter {
	p := &WatchPrinter{w: w, o: o}
	switch o.Format {
	case FormatJSON:
		p.json = &printers.JSONPrinter{}
	case FormatYAML:
		p.json = &printers.YAMLPrinter{} // marks the structured mode; YAML changes are written directly
	default:
		// kubectl's tab writer remembers column widths across flushes, so streamed rows stay
		// aligned with the rows before them (columns only ever widen).
		p.tw = printers.GetNewTabWriter(w)
	}
	return p
}

// Snapshot implements Sink.
func (p *WatchPrinter) Snapshot(r *Report) error {
	if p.json != nil {
		p.docs++
		return Print(p.w, r, p.o)
	}
	if err := Print(p.w, r, p.o); err != nil {
		return err
	}
	if !p.o.NoHeaders {
		_, err := io.WriteString(p.w, "\nWatching for new and deleted leases and changes of class, holder or expiry (renewals alone are not shown).\n")
		return err
	}
	return nil
}

// Change implements Sink.
func (p *WatchPrinter) Change(c *Change) error {
	if p.json != nil {
		if p.o.Format == FormatYAML && p.docs > 0 {
			// The YAML printer separates the documents it prints itself; the snapshot was not
			// printed by it.
			if _, err := io.WriteString(p.w, "---\n"); err != nil {
				return err
			}
		}
		p.docs++
		if p.o.Format == FormatYAML {
			b, err := yaml.Marshal(c)
			if err != nil {
				return err
			}
			_, err = p.w.Write(b)
			return err
		}
		return p.json.PrintObj(c, p.w)
	}
	wide := p.o.Format == FormatWide
	if !p.headers && !p.o.NoHeaders {
		h := []string{"LEASE", "CLASS", "WAS", "RENEWED"}
		if wide {
			h = append(h, "HOLDER")
		}
		h = append(h, "REASON")
		p.writeChangeRow("TIME", "EVENT", "NAMESPACE", h)
	}
	p.headers = true
	it := &c.Item
	was := string(c.From)
	if was == "" {
		was = none
	}
	cells := []string{it.Name, string(it.Class), was, ago(it.RenewTime, c.Time.Time)}
	if wide {
		cells = append(cells, it.holder())
	}
	cells = append(cells, it.Reason)
	p.writeChangeRow(c.Time.Format(time.TimeOnly), c.Type, it.Namespace, cells)
	return p.tw.Flush()
}

func (p *WatchPrinter) writeChangeRow(when, typ, ns string, cells []string) {
	for i := range cells {
		cells[i] = cleanCell(cells[i])
	}
	fmt.Fprint(p.tw, when, "\t", typ, "\t")
	writeRow(p.tw, p.o.AllNamespaces, cleanCell(ns), cells)
}
