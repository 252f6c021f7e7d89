package app

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/progress"
)

// progressFlag is the --progress flag of the commands that do long work (audit, doctor; gc
// has its own): a progress line on stderr, by default only when stderr is a terminal.
type progressFlag struct {
	value string
	show  bool // from value and the terminal, set by Complete
}

func (p *progressFlag) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&p.value, "progress", string(progress.Auto), progress.FlagUsage)
}

// RegisterCompletion completes the three modes.
func (p *progressFlag) RegisterCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(
		[]string{string(progress.Auto), string(progress.Always), string(progress.Never)}, cobra.ShellCompDirectiveNoFileComp))
}

// Complete decides whether to draw progress on stderr; a bad mode is bad usage.
func (p *progressFlag) Complete(stderr io.Writer) error {
	mode, err := progress.ParseMode(p.value)
	if err != nil {
		return err
	}
	p.show = mode.Enabled(stderr)
	return nil
}

// meter returns a Meter drawing on stderr, or nil (drawing nothing) when progress is not shown.
func (p *progressFlag) meter(stderr io.Writer, opts progress.Options) *progress.Meter {
	if !p.show {
		return nil
	}
	return progress.New(stderr, progress.Always, opts)
}
