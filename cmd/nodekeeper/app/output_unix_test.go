//go:build unix

package app

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteHTMLFile: --html (audit, plan) replaces a regular file's contents, and a FIFO that
// nobody reads fails at once (ENXIO) instead of blocking the command until a reader comes. The
// page writer is not called then.
func TestWriteHTMLFile(t *testing.T) {
	dir := t.TempDir()
	page := func(w io.Writer) error { _, err := io.WriteString(w, "<html>new</html>"); return err }

	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte("an older, longer page that must not survive"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeHTMLFile(file, page); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "<html>new</html>" {
		t.Errorf("the file holds %q", got)
	}

	fifo := filepath.Join(dir, "report.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	err := writeHTMLFile(fifo, func(w io.Writer) error { called = true; return page(w) })
	if !errors.Is(err, syscall.ENXIO) {
		t.Errorf("a FIFO without a reader: %v, want ENXIO", err)
	}
	if called {
		t.Error("the page was written to a FIFO nobody reads")
	}
}
