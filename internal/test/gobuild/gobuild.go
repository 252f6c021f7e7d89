// Package gobuild builds a main package once per test process, for the tests and benchmarks that
// run or time a real binary rather than a function: signals, exit codes and a whole process's CPU
// time exist only there. Import it only from tests.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Once returns a function that, on its first call, runs `go build` on the main package pkg (as
// the go command takes it, relative to the test's working directory: "../../cmd/nodekeeper",
// "./rawdelete") into a new temporary directory as name, and from then on returns that binary's
// path, or the build's failure with its output. Building once spares every benchmark after the
// first its own build; the directory outlives the tests so that every caller in the process can
// use it.
func Once(pkg, name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "nodekeeper-"+name+"-bin-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin, nil
	})
}

// Must returns the binary build made, failing tb with the build's error.
func Must(tb testing.TB, build func() (string, error)) string {
	tb.Helper()
	bin, err := build()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}
