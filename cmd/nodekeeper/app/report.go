package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// reportFlags are the output flags doctor and bundle share.
type reportFlags struct {
	output     *outputFlags
	color      string
	ignore     []string
	maxPerRule int
}

func newReportFlags() reportFlags {
	return reportFlags{output: newOutputFlags("text", "output format: text, json or junit", "text", "json", "junit")}
}

func (f *reportFlags) AddFlags(fs *pflag.FlagSet) {
	f.output.AddFlags(fs)
	fs.StringVar(&f.color, "color", "auto", "colour in text output: auto (on a terminal without NO_COLOR), always or never")
	fs.StringSliceVar(&f.ignore, "ignore", nil, "check codes or names to leave out, comma-separated (for example NK202,kube-api-qps-low)")
	fs.IntVar(&f.maxPerRule, "max-per-check", 20, "resources listed per check in text output (-1 = all)")
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
	for _, c := range f.ignore {
		if _, ok := findings.LookupRule(c); !ok {
			return fmt.Errorf("--ignore %q: no such check code or name", c)
		}
	}
	return nil
}

func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// finish filters, prints and turns the report's highest severity into the exit code.
func (f *reportFlags) finish(out io.Writer, rep *findings.Report) error {
	if err := rep.Ignore(f.ignore); err != nil {
		return err
	}
	if err := findings.Print(out, rep, f.output.Output, findings.PrintOptions{Color: useColor(f.color, out), MaxPerRule: f.maxPerRule}); err != nil {
		return err
	}
	max := rep.MaxSeverity()
	if code := findings.ExitCode(max); code != 0 {
		n := 0
		for _, fd := range rep.Findings() {
			if fd.Severity >= findings.Warning {
				n++
			}
		}
		return withExitCode(code, fmt.Errorf("%s: %d findings at warning or error (highest: %s)", rep.Tool, n, max))
	}
	return nil
}
