package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// CommandOptions is the shape of every command's options, kubectl's pattern: settings are
// completed from the flags and arguments, validated, then run.
type CommandOptions interface {
	// Complete turns the flags and arguments into settings; it reads no cluster or file (an
	// error is bad usage unless it carries its own exit code).
	Complete(cmd *cobra.Command, args []string) error
	// Validate refuses settings the command cannot run with (an error is bad usage).
	Validate() error
	// Run does the work; its errors carry their own exit code, else 1.
	Run(ctx context.Context) error
}

// RunOptions is the RunE of every command: Complete, Validate, then Run with the command's
// context (cancelled on the first interrupt). Errors of Complete and Validate exit 2 unless they
// chose their own code.
func RunOptions(o CommandOptions) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return UsageError(err)
		}
		if err := o.Validate(); err != nil {
			return UsageError(err)
		}
		return o.Run(cmd.Context())
	}
}
