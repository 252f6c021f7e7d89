package gc

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
)

// OutputFlags are the output flags of `nodekeeper gc`. -o table (the default), json and yaml
// print the run's plan, outcome and summary (-o json|yaml: one GCResult document); kubectl's
// object formats (-o name, jsonpath=…, go-template=…, custom-columns=…) print the Lease objects
// the run deleted (or, with --dry-run, would delete), as they were listed, so that
// `nodekeeper gc --yes -o name` prints what `kubectl delete -o name` would have.
type OutputFlags struct {
	kubeprint.Flags
}

// NewOutputFlags returns the flags with their defaults.
func NewOutputFlags() *OutputFlags { return &OutputFlags{Flags: *kubeprint.NewFlags("table")} }

// AddFlags registers -o, --template, --allow-missing-template-keys, --sort-by and --no-headers.
func (f *OutputFlags) AddFlags(fs *pflag.FlagSet) {
	f.Flags.AddFlags(fs, "output format: table, or json|yaml for the GCResult report")
}

// Validate rejects an unknown format or a bad template before anything is listed.
func (f *OutputFlags) Validate() error {
	if !f.ObjectFormat() {
		switch f.Output {
		case "table", "json", "yaml":
		default:
			return fmt.Errorf("unknown output format %q (want table, json, yaml, or one of %v)", f.Output, kubeprint.ObjectFormats())
		}
	}
	return f.Flags.Validate()
}

// PrintLeases prints, in the object format of f, the leases of the plan that r deleted (or would
// delete), oldest activity first unless --sort-by says otherwise.
func (f *OutputFlags) PrintLeases(w io.Writer, p *Plan, r *Report) error {
	printer, err := f.ObjectPrinter()
	if err != nil {
		return err
	}
	done := map[string]bool{}
	if r != nil {
		for _, res := range r.Results {
			if res.Outcome == deleter.Deleted || res.Outcome == deleter.WouldDelete {
				done[res.UID] = true
			}
		}
	}
	var leases []coordinationv1.Lease
	for _, l := range p.Leaked() {
		if done[string(l.UID)] {
			leases = append(leases, *l.DeepCopy())
		}
	}
	err = kubeprint.SortBy(f.SortBy, len(leases), func(i int) (any, error) { return kubeprint.JSONValue(&leases[i]) },
		func(i, j int) { leases[i], leases[j] = leases[j], leases[i] })
	if err != nil {
		return err
	}
	return kubeprint.PrintLeases(w, printer, f.Output, leases)
}
