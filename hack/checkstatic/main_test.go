package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCheckStatic builds a tiny program with and without cgo and checks that only the cgo-off
// build passes. The cgo build needs a C compiler; without one that case is skipped and said so.
func TestCheckStatic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF binaries are built on Linux only")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport (\n\t\"net\"\n\t\"os/user\"\n)\n\nfunc main() { _, _ = user.Current(); _, _ = net.LookupHost(\"localhost\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(cgo string) (string, error) {
		out := filepath.Join(dir, "prog-cgo"+cgo)
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", errors.New(string(b))
		}
		return out, nil
	}
	static, err := build("0")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(static); err != nil {
		t.Errorf("CGO_ENABLED=0 build: %v", err)
	}
	if err := checkStatic(src); !errors.Is(err, errNotELF) {
		t.Errorf("a Go source file: %v, want not ELF", err)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler: the dynamic case is not checked")
	}
	dynamic, err := build("1")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(dynamic); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("CGO_ENABLED=1 build: %v, want dynamically linked", err)
	}
}
