package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The exit codes of every command, documented in docs/exit-codes.md. gc adds its own codes from
// 4 up.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the run failed: unreachable cluster, unreadable input, API error
	ExitUsage    = 2 // bad usage: unknown command or flag, bad flag value, missing or extra argument
	ExitFindings = 3 // doctor, bundle, audit: a finding at or above --fail-on
)

// exitError carries a specific process exit code (for example the doctor's severity or gc's
// partial-failure code) up to Execute without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// WithExitCode wraps err so that the process exits with code; a nil err stays nil.
func WithExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// UsageError marks err as bad usage (exit code 2), unless it already carries a code.
func UsageError(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return WithExitCode(ExitUsage, err)
}

// UsageArgs makes an argument check's error bad usage: a missing or extra argument exits 2
// like a bad flag.
func UsageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return UsageError(readableArgsError(cmd, args, check(cmd, args)))
	}
}

// readableArgsError replaces cobra's "requires at least 1 arg(s), only received 0" and "accepts 1
// arg(s), received 2" with what the command takes, from its usage line: "nodekeeper maxpods takes
// TYPE [TYPE...], got no argument; see nodekeeper maxpods --help". Other errors (an unknown
// subcommand) keep cobra's kubectl-like text.
func readableArgsError(cmd *cobra.Command, args []string, err error) error {
	if err == nil || !strings.Contains(err.Error(), "arg(s)") {
		return err
	}
	takes := "no argument"
	if _, rest, ok := strings.Cut(cmd.Use, " "); ok && strings.TrimSpace(rest) != "" {
		takes = strings.TrimSpace(rest)
	}
	got := "no argument"
	switch len(args) {
	case 0:
	case 1:
		got = "1 argument"
	default:
		got = fmt.Sprintf("%d arguments", len(args))
	}
	return fmt.Errorf("%s takes %s, got %s; see %s --help", cmd.CommandPath(), takes, got, cmd.CommandPath())
}

// ExitCode is the process exit code for an error returned by a command tree: 0 for nil, the
// code a command chose, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitFailed
}

// Execute runs root with ctx, prints an error to errOut as "error: ..." and returns the exit
// code. Both mains and the in-process tests run their trees through it. A run that a signal
// ended (ctx from NotifyContext) and that failed for it exits 130 (SIGINT) or 143 (SIGTERM).
//
// The first signal ends the run whatever the command is doing: a command that has not returned
// ShutdownGrace after the signal (blocked outside the context: a read of a FIFO nobody writes, a
// parse that does not look at the context) is abandoned, and Execute returns 130 or 143 at once
// for the main to exit with. Commands that clean up on the signal and need longer (the sandbox
// stopping its control plane, the controller releasing its leadership) say so with
// SetShutdownGrace; a second signal is never needed.
//
// The error is printed through textsafe: it often quotes text written by others (a file or
// member name in an OS error, an API server's message), and this is the one place every error
// reaches the terminal.
func Execute(ctx context.Context, root *cobra.Command, errOut io.Writer) int {
	grace := &shutdownGrace{}
	grace.d.Store(int64(ShutdownGrace))
	ctx = context.WithValue(ctx, shutdownGraceKey{}, grace)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = waitGrace(ctx, done, grace)
	}
	code, err := signalExit(ctx, err, ExitCode(err))
	if err != nil {
		fmt.Fprintln(errOut, "error:", ErrorText(headline(err)))
	}
	return code
}

// waitGrace waits for the command after its context ended: for ever unless a signal ended it,
// else for its grace from the signal on, then gives the signal as the run's error. The grace is
// read again when it runs out, so that a command that asked for longer while stopping
// (SetShutdownGrace) gets it.
func waitGrace(ctx context.Context, done <-chan error, grace *shutdownGrace) error {
	var se *SignalError
	if !errors.As(context.Cause(ctx), &se) {
		return <-done
	}
	start := time.Now()
	for {
		d := time.Duration(grace.d.Load())
		left := d - time.Since(start)
		if left <= 0 {
			return fmt.Errorf("%w: the command did not stop within %s and was abandoned", se, d)
		}
		t := time.NewTimer(left)
		select {
		case err := <-done:
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// ShutdownGrace is how long a command has to return after the first signal before Execute
// abandons it, unless it chose another with SetShutdownGrace. A command that watches its
// context returns within milliseconds.
const ShutdownGrace = 2 * time.Second

type shutdownGraceKey struct{}

type shutdownGrace struct{ d atomic.Int64 }

// SetShutdownGrace gives the command run with ctx (by Execute) d to return after the first
// signal: for a command whose cleanup on the signal takes longer than ShutdownGrace. Outside
// Execute it does nothing.
func SetShutdownGrace(ctx context.Context, d time.Duration) {
	if g, ok := ctx.Value(shutdownGraceKey{}).(*shutdownGrace); ok {
		g.d.Store(int64(d))
	}
}

// Headline is an error that says everything a person needs on its own, so that Execute prints
// it in place of the messages wrapped around it: "no cluster answered at ..." (kube's
// NoClusterError) is the whole story, whatever the command was reading when it happened.
type Headline interface {
	error
	Headline() string
}

func headline(err error) error {
	var h Headline
	if errors.As(err, &h) {
		return errors.New(h.Headline())
	}
	return err
}

// ErrorText is err's message as Execute prints it: every control character, C1 and bidi control
// and invalid byte shown as a visible escape (textsafe.Escape), ordinary text (spaces, non-ASCII
// letters) unchanged. Line breaks of a multi-line message (a control-plane log tail) are kept,
// each following line indented, so that no line of it can pass for a line of its own.
func ErrorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = textsafe.Escape(l)
	}
	return strings.Join(lines, "\n  ")
}
