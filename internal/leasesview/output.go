package leasesview

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
)

// OutputFlags are the output and selection flags of `nodekeeper leases`: kubectl's printing
// flags (kubeprint), -l/--selector on the leases' own labels (kubectl's -l) and --node-selector
// on the labels of their Nodes.
//
// -o json and -o yaml print nodekeeper's LeaseReport (classified rows, summary), as they always
// have; -o name, jsonpath, jsonpath-as-json, go-template and custom-columns print the Lease
// objects themselves, exactly as `kubectl get lease` does, so the same template gives the same
// text with either tool.
type OutputFlags struct {
	kubeprint.Flags
	// Selector is -l/--selector: a label selector on the leases' own labels, applied by the API
	// server as kubectl's -l is (Options.LabelSelector).
	Selector string
	// NodeSelector is --node-selector: a label selector on Nodes (NodeSelectorHelp).
	NodeSelector string
}

// NewOutputFlags returns the flags with their defaults (tables).
func NewOutputFlags() *OutputFlags { return &OutputFlags{Flags: *kubeprint.NewFlags(FormatTable)} }

// AddFlags registers -o, --template, --allow-missing-template-keys, --sort-by, --no-headers,
// --show-kind, -l/--selector and --node-selector.
func (f *OutputFlags) AddFlags(fs *pflag.FlagSet) {
	f.Flags.AddFlags(fs, "output format: wide, or json|yaml for nodekeeper's LeaseReport (default: tables)")
	f.Flags.AddShowKind(fs)
	fs.StringVarP(&f.Selector, "selector", "l", f.Selector, SelectorHelp)
	fs.StringVar(&f.NodeSelector, "node-selector", f.NodeSelector, NodeSelectorHelp)
}

// Validate rejects flags that cannot be used, before anything is read from the cluster.
func (f *OutputFlags) Validate(watch bool) error {
	if !f.ObjectFormat() {
		if err := ValidateFormat(f.Output); err != nil {
			return err
		}
	}
	if err := f.Flags.Validate(); err != nil {
		return err
	}
	if err := parseSelector("-l/--selector", f.Selector); err != nil {
		return err
	}
	if err := parseSelector("--node-selector", f.NodeSelector); err != nil {
		return err
	}
	if watch {
		switch {
		case f.ObjectFormat():
			return fmt.Errorf("-o %s cannot be used with --watch; use the tables, -o wide, json or yaml", f.Output)
		case f.NodeSelector != "":
			return errors.New("--node-selector cannot be used with --watch (-l, on the leases' labels, can)")
		case f.SortBy != "":
			return errors.New("--sort-by cannot be used with --watch: changes print as they happen")
		}
	}
	return nil
}

// PrintOptions returns the table options these flags set; the caller adds AllNamespaces and
// node columns.
func (f *OutputFlags) PrintOptions() PrintOptions {
	return PrintOptions{Format: f.Output, NoHeaders: f.NoHeaders, ShowKind: f.ShowKind}
}

// Run lists what opts and the flags select and prints it to w. decorate, when set, may add to
// the report and the table options before printing (leases --aws); it is not called for object
// formats.
func (f *OutputFlags) Run(ctx context.Context, w io.Writer, c *Clients, opts Options, popts PrintOptions, decorate func(*Report, *PrintOptions) error) error {
	if f.Selector != "" {
		opts.LabelSelector = f.Selector
	}
	var nodes map[string]bool
	if f.NodeSelector != "" {
		var err error
		if nodes, err = SelectNodes(ctx, c.Metadata, f.NodeSelector, opts.ChunkSize); err != nil {
			return err
		}
	}
	if f.ObjectFormat() {
		p, err := f.ObjectPrinter()
		if err != nil {
			return err
		}
		leases, err := ListObjects(ctx, c, opts, nodes)
		if err != nil {
			return err
		}
		err = kubeprint.SortBy(f.SortBy, len(leases), func(i int) (any, error) { return kubeprint.JSONValue(&leases[i]) },
			func(i, j int) { leases[i], leases[j] = leases[j], leases[i] })
		if err != nil {
			return err
		}
		return kubeprint.PrintLeases(w, p, f.Output, leases)
	}
	classes := opts.Classes
	if nodes != nil {
		opts.Classes = nil // the summary of a selection counts every class of it
	}
	r, err := List(ctx, c, opts)
	if err != nil {
		return err
	}
	if nodes != nil {
		SelectNodeLeases(r, nodes, classes)
	}
	if err := SortReport(r, f.SortBy); err != nil {
		return err
	}
	if decorate != nil {
		if err := decorate(r, &popts); err != nil {
			return err
		}
	}
	return Print(w, r, popts)
}

// SortReport orders the rows by the --sort-by JSONPath, evaluated on each row's Lease (Item.Lease);
// the tables keep their sections, each in that order. No expression keeps the class order.
func SortReport(r *Report, sortBy string) error {
	return kubeprint.SortBy(sortBy, len(r.Items), func(i int) (any, error) { return kubeprint.JSONValue(r.Items[i].Lease()) },
		func(i, j int) { r.Items[i], r.Items[j] = r.Items[j], r.Items[i] })
}
