package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestErrorText: controls, C1 and bidi characters are escaped, ordinary text (spaces, letters of
// any script) is not, and a multi-line message keeps its lines, the following ones indented.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"open /tmp/my logs/audit.log: no such file", "open /tmp/my logs/audit.log: no such file"},
		{"open évènements/журнал: denied", "open évènements/журнал: denied"},
		{"open evil\x1b]0;t\a\u202e\u009b: denied", `open evil\x1b]0;t\x07\u202e\u009b: denied`},
		{"bad\r\xff", `bad\r\xff`},
		{"waiting for etcd: timeout; last log lines:\nline 1\nline\x1b[2J 2", "waiting for etcd: timeout; last log lines:\n  line 1\n  line\\x1b[2J 2"},
	} {
		if got := ErrorText(errors.New(tc.in)); got != tc.want {
			t.Errorf("ErrorText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSignalExit: a run that a signal cut short and that failed for it (exit 1, a cancellation)
// exits 128 + the signal's number and says which signal; a code the command chose (gc's 5), a
// clean end and a failure of its own are kept.
func TestSignalExit(t *testing.T) {
	interrupted := func(sig os.Signal) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&SignalError{Signal: sig})
		return ctx
	}
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		code     int
		wantCode int
		wantMsg  string
	}{
		{"SIGINT, cancelled", interrupted(os.Interrupt), fmt.Errorf("reading: %w", context.Canceled), ExitFailed, 130, "interrupted by SIGINT (reading: context canceled)"},
		{"SIGTERM, the cause returned", interrupted(syscall.SIGTERM), Interrupted(interrupted(syscall.SIGTERM)), ExitFailed, 143, "interrupted by SIGTERM"},
		{"SIGINT, gc's own code", interrupted(os.Interrupt), WithExitCode(5, context.Canceled), 5, 5, "context canceled"},
		{"SIGINT, clean end", interrupted(os.Interrupt), nil, ExitOK, ExitOK, ""},
		{"SIGINT, another failure", interrupted(os.Interrupt), errors.New("disk full"), ExitFailed, ExitFailed, "disk full"},
		{"no signal", context.Background(), context.Canceled, ExitFailed, ExitFailed, "context canceled"},
	} {
		code, err := signalExit(tc.ctx, tc.err, tc.code)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if code != tc.wantCode || msg != tc.wantMsg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, msg, tc.wantCode, tc.wantMsg)
		}
	}
}

// TestExecuteAbandonsAStuckCommand (issue 31 item 2): after the first signal, a command that does
// not return within its grace (blocked outside its context) is abandoned: Execute returns 143 at
// once, saying so. A command that returns within the grace keeps its own result, and without a
// signal Execute waits for the command however long it takes.
func TestExecuteAbandonsAStuckCommand(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	ctx, cancel := context.WithCancelCause(context.Background())
	root := &cobra.Command{Use: "stuck", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		SetShutdownGrace(cmd.Context(), 50*time.Millisecond)
		cancel(&SignalError{Signal: syscall.SIGTERM}) // the signal comes while it runs
		<-stuck                                       // a read of a FIFO nobody writes
		return nil
	}}
	root.SetArgs(nil)
	var errOut strings.Builder
	if code := Execute(ctx, root, &errOut); code != 143 {
		t.Errorf("exit %d, want 143", code)
	}
	if want := "error: interrupted by SIGTERM: the command did not stop within 50ms and was abandoned"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}

	// Returning within the grace: the command's own result (a clean end is 0).
	clean := &cobra.Command{Use: "clean", RunE: func(cmd *cobra.Command, _ []string) error { <-cmd.Context().Done(); return nil }}
	clean.SetArgs(nil)
	if code := Execute(ctx, clean, &errOut); code != ExitOK {
		t.Errorf("a command that stopped on the signal: exit %d, want 0", code)
	}

	// No signal: a context that ends for another reason is waited for.
	done := make(chan struct{})
	slow := &cobra.Command{Use: "slow", SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		<-done
		return cmd.Context().Err()
	}}
	slow.SetArgs(nil)
	plain, stop := context.WithCancel(context.Background())
	stop()
	go func() { time.Sleep(100 * time.Millisecond); close(done) }()
	if code := Execute(plain, slow, &errOut); code != ExitFailed {
		t.Errorf("no signal: exit %d, want the command's 1", code)
	}
}
