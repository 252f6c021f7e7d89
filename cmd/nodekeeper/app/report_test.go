package app

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestUseColor: always and never are the user's; auto is cli-runtime's decision, which says no
// to anything that is not a terminal, whatever the environment.
func TestUseColor(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("TERM", "xterm-256color")
	for _, tc := range []struct {
		mode string
		w    io.Writer
		want bool
	}{
		{"always", &bytes.Buffer{}, true},
		{"never", &bytes.Buffer{}, false},
		{"auto", &bytes.Buffer{}, false},
		{"auto", f, false},
		{"always", f, true},
	} {
		if got := useColor(tc.mode, tc.w); got != tc.want {
			t.Errorf("useColor(%s, %T) = %v, want %v", tc.mode, tc.w, got, tc.want)
		}
	}
}
