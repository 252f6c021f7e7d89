package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/nodekeeper/nodekeeper/internal/bundle"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/findings/findingshtml"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// reportFlags are the output flags doctor and bundle share.
type reportFlags struct {
	output     *outputFlags
	color      string
	ignore     []string
	maxPerRule int
	failOn     string

	// htmlFile is --html of the commands that offer it (doctor): the page is written after the
	// report is printed, with the same findings.
	htmlFile string

	failOnSeverity findings.Severity // parsed by Validate
	// catalog is where --ignore, its completion and the text printer look rules up.
	catalog *findings.Catalog
}

// ruleCatalog is every rule doctor and bundle report: the node rules they share (internal/rules)
// and each command's own. Both commands accept each other's codes in --ignore, so one CI
// configuration serves both.
func ruleCatalog() *findings.Catalog {
	return findings.MustCatalog(rules.Rules, doctor.Rules, bundle.Rules)
}

func newReportFlags() reportFlags {
	return reportFlags{output: newOutputFlags("text", "output format: text, json or junit", "text", "json", "junit"), catalog: ruleCatalog()}
}

func (f *reportFlags) AddFlags(fs *pflag.FlagSet) {
	f.output.AddFlags(fs)
	fs.StringVar(&f.color, "color", "auto", "colour in text output: auto (on a terminal without NO_COLOR), always or never")
	fs.StringSliceVar(&f.ignore, "ignore", nil, "check codes or names to leave out, comma-separated (for example NK202,kube-api-qps-low)")
	fs.IntVar(&f.maxPerRule, "max-per-check", 20, "resources listed per check in text output (-1 = all)")
	addFailOnFlag(fs, &f.failOn, "warning")
}

// addFailOnFlag adds --fail-on, the lowest severity that makes the command exit 3.
func addFailOnFlag(fs *pflag.FlagSet, p *string, def string) {
	fs.StringVar(p, "fail-on", def, "exit 3 when a finding is at or above this severity: "+strings.Join(findings.FailOnNames, ", ")+" (none: exit 0 whatever is found)")
}

// RegisterCompletion completes -o, --color, --ignore and --fail-on.
func (f *reportFlags) RegisterCompletion(cmd *cobra.Command) {
	f.output.RegisterCompletion(cmd)
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("ignore", completeRules(f.catalog))
	registerFailOnCompletion(cmd)
}

func (f *reportFlags) Validate() error {
	if err := f.output.Validate(); err != nil {
		return err
	}
	switch f.color {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("unknown --color %q (want auto, always or never)", f.color)
	}
	var err error
	if f.failOnSeverity, err = findings.ParseFailOn(f.failOn); err != nil {
		return err
	}
	for _, c := range f.ignore {
		if _, ok := f.catalog.Lookup(c); !ok {
			return fmt.Errorf("--ignore %q: no such check code or name", c)
		}
	}
	return nil
}

// useColor is --color: auto leaves the decision to cli-runtime's, kubectl's own (a terminal,
// TERM not dumb, no NO_COLOR in the environment, on Windows a modern terminal).
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return printers.AllowsColorOutput(w)
}

// finish filters, prints and turns the report's highest severity into the exit code: 3 when it
// is at or above --fail-on.
func (f *reportFlags) finish(out io.Writer, rep *findings.Report) error {
	if err := rep.Ignore(f.catalog, f.ignore); err != nil {
		return err
	}
	rep.FailOn = f.failOnSeverity
	if err := findings.Print(out, rep, f.output.Output, findings.PrintOptions{Color: useColor(f.color, out), MaxPerRule: f.maxPerRule, Catalog: f.catalog}); err != nil {
		return err
	}
	if f.htmlFile != "" {
		if err := writeHTMLFile(f.htmlFile, func(w io.Writer) error { return findingshtml.Write(w, rep) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	max := rep.MaxSeverity()
	if code := findings.ExitCodeAt(max, f.failOnSeverity); code != findings.ExitOK {
		n := 0
		for _, fd := range rep.Findings() {
			if fd.Severity >= f.failOnSeverity {
				n++
			}
		}
		return cli.WithExitCode(cli.ExitFindings, fmt.Errorf("%s: %d findings at --fail-on %s or above (highest: %s)", rep.Tool, n, f.failOn, max))
	}
	return nil
}
