// Package kubeprint gives nodekeeper's listing commands (`leases`, `gc`) kubectl's output flags
// for Lease objects: -o name, jsonpath=…, jsonpath-as-json=…, go-template=…, custom-columns=…,
// with --template, --allow-missing-template-keys, --sort-by and --no-headers, through
// cli-runtime's own printers (custom-columns, which cli-runtime leaves to kubectl, is written
// here). The commands keep their own tables and their versioned report for -o wide/json/yaml;
// this package only decides which formats are object formats and prints a list of Leases the way
// `kubectl get lease` would.
package kubeprint

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/printers"
)

// objectFormats are the -o values (before any "=") printed from Lease objects.
var objectFormats = []string{"name", "jsonpath", "jsonpath-as-json", "jsonpath-file", "go-template", "go-template-file", "template", "templatefile", "custom-columns"}

// ObjectFormats lists the object -o values for help text and completion, with "=" after those
// that take an argument.
func ObjectFormats() []string {
	return []string{"name", "jsonpath=", "jsonpath-as-json=", "go-template=", "custom-columns="}
}

// Flags are the output flags shared by `leases` and `gc`.
type Flags struct {
	// Output is -o. The command decides what its own formats ("", wide, json, yaml, table) print;
	// ObjectFormat reports the rest.
	Output string
	// Template is --template, the template of -o jsonpath / go-template given separately.
	Template string
	// AllowMissingTemplateKeys is --allow-missing-template-keys (kubectl's default: true).
	AllowMissingTemplateKeys bool
	// SortBy is --sort-by, a JSONPath over each Lease object ('{.spec.renewTime}' or '.metadata.name').
	SortBy string
	// NoHeaders is --no-headers.
	NoHeaders bool
	// ShowKind is --show-kind: table names as lease.coordination.k8s.io/NAME.
	ShowKind bool
}

// NewFlags returns Flags with kubectl's defaults and the command's default -o.
func NewFlags(defaultOutput string) *Flags {
	return &Flags{Output: defaultOutput, AllowMissingTemplateKeys: true}
}

// AddFlags registers -o (described by outputHelp, the command's own formats), --template,
// --allow-missing-template-keys, --sort-by and --no-headers. --show-kind is registered by
// AddShowKind, for commands that print a table of leases.
func (f *Flags) AddFlags(fs *pflag.FlagSet, outputHelp string) {
	fs.StringVarP(&f.Output, "output", "o", f.Output, outputHelp+"; or a kubectl object format over the Lease objects: "+strings.Join(ObjectFormats(), ", ")+"…")
	fs.StringVar(&f.Template, "template", f.Template, "template string or path to a template file for -o go-template, go-template-file, jsonpath or jsonpath-file (golang template syntax: golang.org/pkg/text/template)")
	fs.BoolVar(&f.AllowMissingTemplateKeys, "allow-missing-template-keys", f.AllowMissingTemplateKeys, "ignore errors in templates when a field or map key is missing (object formats only)")
	fs.StringVar(&f.SortBy, "sort-by", f.SortBy, "sort by this JSONPath over each Lease object, e.g. '{.spec.renewTime}' or '.metadata.creationTimestamp'")
	fs.BoolVar(&f.NoHeaders, "no-headers", f.NoHeaders, "print rows only: no column headers (and no summary)")
}

// AddShowKind registers --show-kind.
func (f *Flags) AddShowKind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.ShowKind, "show-kind", f.ShowKind, "prefix every lease name with its resource, lease.coordination.k8s.io/NAME, as kubectl does")
}

// ObjectFormat reports whether -o asks for Lease objects rather than the command's own output.
func (f *Flags) ObjectFormat() bool {
	name, _, _ := strings.Cut(f.Output, "=")
	for _, o := range objectFormats {
		if name == o {
			return true
		}
	}
	// --template without -o means go-template, as in kubectl.
	return f.Output == "" && f.Template != ""
}

// Validate checks the object format and the --sort-by expression now, before anything is read
// from a cluster, so a typo is a usage error rather than a failure after a long listing.
func (f *Flags) Validate() error {
	if f.SortBy != "" {
		if _, err := parseJSONPath("--sort-by", f.SortBy); err != nil {
			return err
		}
	}
	if f.ObjectFormat() {
		_, err := f.ObjectPrinter()
		return err
	}
	return nil
}

// ObjectPrinter returns the printer of an object format: cli-runtime's name, JSONPath and Go
// template printers (kubectl's own), or the custom-columns printer of this package. It chooses
// them as kubectl's print flags (cli-runtime's genericclioptions.PrintFlags) do, with the same
// messages, without linking genericclioptions: that package brings cli-runtime's resource
// builder and kustomize into the binary (TestObjectPrinterIsKubectls holds the two together).
func (f *Flags) ObjectPrinter() (printers.ResourcePrinter, error) {
	if spec, ok := strings.CutPrefix(f.Output, "custom-columns="); ok {
		return NewCustomColumns(spec, f.NoHeaders)
	}
	if f.Output == "custom-columns" {
		return nil, fmt.Errorf("custom-columns needs a spec: -o custom-columns=NAME:.metadata.name,RENEWED:.spec.renewTime")
	}
	p, err := f.templatePrinter()
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", f.Output, err)
	}
	return p, nil
}

// jsonPathFormats and goTemplateFormats are kubectl's template formats (with json, yaml, kyaml
// and name, the formats its print flags know).
var (
	jsonPathFormats   = []string{"jsonpath", "jsonpath-as-json", "jsonpath-file"}
	goTemplateFormats = []string{"go-template", "go-template-file", "template", "templatefile"}
)

// templatePrinter is kubectl's choice of printer for -o and --template: --template alone means
// go-template; with --template, -o names the format whole (an inline "=TEMPLATE" is then no
// format); without it, the template follows the format's "=".
func (f *Flags) templatePrinter() (printers.ResourcePrinter, error) {
	format, template := f.Output, f.Template
	if template != "" && format == "" {
		format = "go-template"
	}
	if template == "" {
		if name, arg, ok := strings.Cut(format, "="); ok && (slices.Contains(jsonPathFormats, name) || slices.Contains(goTemplateFormats, name)) {
			format, template = name, arg
		}
	}
	if lower := strings.ToLower(format); lower == "name" || lower == "" {
		return &printers.NamePrinter{ShortOutput: lower == "name"}, nil
	}
	jsonPath := slices.Contains(jsonPathFormats, format)
	if !jsonPath && !slices.Contains(goTemplateFormats, format) {
		allowed := append([]string{"json", "yaml", "kyaml", "name"}, append(slices.Clone(goTemplateFormats), jsonPathFormats...)...)
		slices.Sort(allowed)
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", f.Output, strings.Join(allowed, ","))
	}
	if template == "" {
		return nil, fmt.Errorf("template format specified but no template given")
	}
	if format == "jsonpath-file" || format == "go-template-file" || format == "templatefile" {
		data, err := os.ReadFile(template)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %v", template, err)
		}
		template = string(data)
	}
	if jsonPath {
		p, err := printers.NewJSONPathPrinter(template)
		if err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", template, err)
		}
		p.AllowMissingKeys(f.AllowMissingTemplateKeys)
		p.EnableJSONOutput(format == "jsonpath-as-json")
		return p, nil
	}
	p, err := printers.NewGoTemplatePrinter([]byte(template))
	if err != nil {
		return nil, fmt.Errorf("error parsing template %s, %v", template, err)
	}
	p.AllowMissingKeys(f.AllowMissingTemplateKeys)
	return p, nil
}
