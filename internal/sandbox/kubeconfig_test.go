package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKubeconfigFile covers every case of --write-kubeconfig: a new path, an existing file
// without and with --force (a 0644 file must come out 0600, the old mode never kept), a directory,
// and what exit removes.
func TestWriteKubeconfigFile(t *testing.T) {
	const secret = "client-key-data: c2VjcmV0\n"
	tests := []struct {
		name       string
		existing   *os.FileMode // a file at the path before the run, with this mode
		dir        bool         // a directory at the path
		force      bool
		wantErr    string
		wantKept   bool   // after Cleanup the path still exists
		wantBefore string // content after Cleanup when kept
	}{
		{name: "new path is created 0600 and removed on exit"},
		{name: "new path with force behaves the same", force: true},
		{name: "existing file is refused", existing: ptrMode(0o644), wantErr: "already exists", wantKept: true, wantBefore: "users' config"},
		{name: "existing 0644 file replaced with force comes out 0600 and stays", existing: ptrMode(0o644), force: true, wantKept: true, wantBefore: secret},
		{name: "a directory is refused", dir: true, wantErr: "already exists"},
		{name: "a directory is refused with force too", dir: true, force: true, wantErr: "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			if tc.existing != nil {
				if err := os.WriteFile(path, []byte("users' config"), *tc.existing); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, *tc.existing); err != nil { // whatever the umask
					t.Fatal(err)
				}
			}
			if tc.dir {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			kf, err := WriteKubeconfigFile(path, []byte(secret), tc.force)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want one naming %s and saying %q", err, path, tc.wantErr)
				}
				if tc.existing != nil {
					assertContent(t, path, tc.wantBefore, *tc.existing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertContent(t, path, secret, 0o600)
			if kf.Replaced != (tc.existing != nil) {
				t.Errorf("Replaced = %v", kf.Replaced)
			}
			if _, err := kf.Cleanup(); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(path)
			if kept := statErr == nil; kept != tc.wantKept {
				t.Fatalf("after Cleanup the path exists = %v, want %v", kept, tc.wantKept)
			}
			if tc.wantKept {
				assertContent(t, path, tc.wantBefore, 0o600)
			}
			leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".config.tmp-*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary files left behind: %v", leftovers)
			}
		})
	}
}

// TestKubeconfigCleanupKeepsAReplacement: when somebody (kubectl config, another tool) replaced the
// sandbox's file while it ran, exit leaves the replacement alone.
func TestKubeconfigCleanupKeepsAReplacement(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	kf, err := WriteKubeconfigFile(path, []byte("sandbox"), false)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	msg, err := kf.Cleanup()
	if err != nil {
		t.Fatal(err)
	}
	assertContent(t, path, "theirs", 0o600)
	if !strings.Contains(msg, "left "+path+" in place") {
		t.Errorf("Cleanup message = %q", msg)
	}
	// Removed already by somebody else: nothing to do, no error.
	os.Remove(path)
	if _, err := kf.Cleanup(); err != nil {
		t.Errorf("Cleanup of a vanished file: %v", err)
	}
}

func ptrMode(m os.FileMode) *os.FileMode { return &m }

func assertContent(t *testing.T, path, want string, mode os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != mode {
		t.Errorf("%s has mode %v, want %v", path, info.Mode().Perm(), mode)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}
