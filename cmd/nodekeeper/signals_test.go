//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadline is how long a test waits for a command that must end "promptly" before it fails: far
// above the time it takes (well under a second), so that a loaded machine never fails it; a
// command that blocks for ever fails it.
const deadline = 30 * time.Second

// buildBinary builds this main into a temporary directory: signals and blocking opens are
// properties of the process, which the in-process tests of package app cannot show.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodekeeper")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// waitExit waits for cmd to end, killing it and failing the test after deadline, and returns its
// exit code (-1 when a signal killed it).
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		t.Fatalf("wait: %v", err)
	case <-time.After(deadline):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running after %s", strings.Join(cmd.Args, " "), deadline)
	}
	return 0
}

// TestSignalsAndFIFOs, with the built binary:
//   - a FIFO named as an input (audit FILE, bundle FILE, bundle --user-data FILE) is refused at
//     once (exit 1) instead of waiting for a writer that never comes (--html naming a FIFO
//     without a reader: app's TestWriteHTMLFile);
//   - a command blocked reading standard input from a pipe whose writer never writes nor closes
//     (`sleep 60 | nodekeeper audit`) ends on the first SIGINT with 130, on SIGTERM with 143.
func TestSignalsAndFIFOs(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "kubelet.journal")
	if err := os.WriteFile(journal, []byte(`Mar 04 09:15:01 ip-10-0-1-12 kubelet[2101]: I0304 09:15:01.000000    2101 kubelet.go:100] "Started kubelet"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("FIFO refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"audit FIFO", []string{"audit", fifo}},
			{"audit GLOB", []string{"audit", filepath.Join(dir, "*.fifo")}},
			{"bundle FIFO", []string{"bundle", fifo}},
			{"bundle --user-data FIFO", []string{"bundle", journal, "--user-data", fifo}},
		} {
			args := tc.args
			t.Run(tc.name, func(t *testing.T) {
				var stderr bytes.Buffer
				cmd := exec.Command(bin, args...)
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if code := waitExit(t, cmd); code != 1 {
					t.Errorf("exit %d, want 1\nstderr: %s", code, stderr.String())
				}
				if !strings.Contains(stderr.String(), "not a regular file") {
					t.Errorf("stderr does not say why:\n%s", stderr.String())
				}
			})
		}
	})

	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{
		{syscall.SIGINT, 130},
		{syscall.SIGTERM, 143},
	} {
		t.Run("stdin blocked, "+tc.sig.String(), func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close()
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "audit", "--progress", "never")
			cmd.Stdin, cmd.Stderr = pr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			// More than a pipe holds: when the write returns, the command has read most of it, so
			// it is past its start (the signal handler installed) and reading its input. The
			// write end then stays open: the next read blocks, as behind `sleep 60 |`.
			written := make(chan error, 1)
			go func() {
				_, err := io.Copy(pw, io.LimitReader(blankLines{}, 4<<20))
				written <- err
			}()
			select {
			case err := <-written:
				if err != nil {
					t.Fatalf("writing to the command: %v\nstderr: %s", err, stderr.String())
				}
			case <-time.After(deadline):
				_ = cmd.Process.Kill()
				t.Fatalf("the command did not read its input within %s", deadline)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd); code != tc.code {
				t.Errorf("exit %d after %s, want %d\nstderr: %s", code, tc.sig, tc.code, stderr.String())
			}
			want := map[syscall.Signal]string{syscall.SIGINT: "interrupted by SIGINT", syscall.SIGTERM: "interrupted by SIGTERM"}[tc.sig]
			if !strings.Contains(stderr.String(), "error: "+want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		})
	}
}

// TestFirstSignalEndsAnyCommand (issue 31 item 2), with the built binary: `plan --scenario FIFO`
// blocks in a read of the FIFO, outside any context (a writer holds it open and writes nothing);
// the first SIGTERM or SIGINT ends the process with 143 or 130 all the same, saying the command
// was abandoned. Before, it was still alive minutes later and needed a second signal.
func TestFirstSignalEndsAnyCommand(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{
		{syscall.SIGTERM, 143, "SIGTERM"},
		{syscall.SIGINT, 130, "SIGINT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "scenario.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "plan", "--scenario", fifo)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Opening the FIFO for writing returns once the command has opened it for reading:
			// it is then past its start (the signal handler installed) and blocked in the read.
			opened := make(chan *os.File, 1)
			go func() {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					t.Errorf("opening the FIFO for writing: %v", err)
					w = nil
				}
				opened <- w
			}()
			select {
			case w := <-opened:
				if w == nil {
					_ = cmd.Process.Kill()
					return
				}
				defer w.Close()
			case <-time.After(deadline):
				_ = cmd.Process.Kill()
				t.Fatalf("the command did not open its scenario within %s\nstderr: %s", deadline, stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd); code != tc.code {
				t.Errorf("exit %d after %s, want %d\nstderr: %s", code, tc.sig, tc.code, stderr.String())
			}
			if want := "error: interrupted by " + tc.name + ": the command did not stop within 2s and was abandoned"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		})
	}
}

// blankLines reads as an endless run of empty lines.
type blankLines struct{}

func (blankLines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	return len(p), nil
}
