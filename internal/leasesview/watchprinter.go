package leasesview

import (
	"fmt"
	"io"
	"time"

	"github.com/liggitt/tabwriter"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

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
		return p.json.PrintObj(c, textsafe.NewJSONWriter(p.w))
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
	cells := []string{kubeprint.Name(it.Name, p.o.ShowKind), string(it.Class), was, ago(it.RenewTime, c.Time.Time)}
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
