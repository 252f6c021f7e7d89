package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
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
