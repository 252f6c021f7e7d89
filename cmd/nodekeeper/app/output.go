package app

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputFlags is the -o/--output flag every command shares: the formats a command offers, its
// default, one error message for an unknown format and one shell completion.
type outputFlags struct {
	Output string

	formats []string // what -o accepts, in the order help and completion show
	def     string
	usage   string
}

// newOutputFlags accepts formats; def is the default (it may be "" for a command whose default
// has no name, like the leases tables) and usage the flag's help text.
func newOutputFlags(def, usage string, formats ...string) *outputFlags {
	return &outputFlags{Output: def, formats: formats, def: def, usage: usage}
}

// AddFlags adds -o/--output to fs.
func (o *outputFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", o.def, o.usage)
}

// RegisterCompletion completes -o with the offered formats.
func (o *outputFlags) RegisterCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats, cobra.ShellCompDirectiveNoFileComp))
}

// Validate refuses a format the command does not offer.
func (o *outputFlags) Validate() error {
	if o.Output == o.def || slices.Contains(o.formats, o.Output) {
		return nil
	}
	return fmt.Errorf("unknown output format %q (want %s)", o.Output, orList(o.formats))
}

// orList writes "a, b or c".
func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// writeHTMLFile writes the page of --html to path. Not waiting for a reader should path name a
// FIFO: opened without blocking, it fails at once when nobody reads it.
func writeHTMLFile(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|openNonBlock, 0o666)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
