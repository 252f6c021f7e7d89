package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cause of a context cancelled by NotifyContext: which signal ended the run.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// Is makes a SignalError a context.Canceled, as the context it cancels reports.
func (e *SignalError) Is(target error) bool { return target == context.Canceled }

// ExitCode is the shells' code for a process ended by the signal: 128 + its number (130 for
// SIGINT, 143 for SIGTERM).
func (e *SignalError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return ExitFailed
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// NotifyContext is the one signal handler of both mains: the first SIGINT or SIGTERM cancels
// the context with a *SignalError as its cause (context.Cause), and restores the default
// handling, so that a second Ctrl-C ends the process at once. stop releases the handler.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(&SignalError{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		select {
		case <-done:
		default:
			close(done)
		}
		cancel(nil)
	}
}

// Interrupted returns ctx's error, naming the signal when one cancelled it: what a command
// returns when it stops part way because of a signal.
func Interrupted(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// signalExit is the exit code and message of a run ended by a signal: a command that failed
// because of it (exit 1, its error a cancellation) exits 128 + the signal's number. A command
// that chose its own code (gc's 5 after reporting what it did) or ended cleanly keeps it.
func signalExit(ctx context.Context, err error, code int) (int, error) {
	var se *SignalError
	if err == nil || code != ExitFailed || !errors.As(context.Cause(ctx), &se) {
		return code, err
	}
	if !errors.As(err, new(*SignalError)) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return code, err // failed for a reason of its own
		}
		err = fmt.Errorf("%w (%v)", se, err)
	}
	return se.ExitCode(), err
}
