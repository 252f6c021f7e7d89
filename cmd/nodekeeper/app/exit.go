package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// exitError carries a specific process exit code (for example the doctor's severity or gc's
// partial-failure code) up to Execute without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitCode wraps err so that the process exits with code; a nil err stays nil.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// ExitCode is the process exit code for an error returned by the command tree: 0 for nil, the
// code a command chose, else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// Execute runs root with ctx, prints an error to errOut as "error: ..." and returns the exit
// code. main and the in-process tests both run the tree through it.
func Execute(ctx context.Context, root *cobra.Command, errOut io.Writer) int {
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(errOut, "error:", err)
	}
	return ExitCode(err)
}
