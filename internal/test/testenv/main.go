package testenv

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// Main is a TestMain body: it starts one control plane for the whole test package, stores it in
// *env, runs the tests and tears it down, also on SIGINT/SIGTERM. A package whose tests cannot
// start a control plane fails loudly instead of silently skipping.
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{ControllerManager: true}, &env) }
func Main(m *testing.M, opts Options, env **Env) {
	RunMain(m, MainOptions{Options: opts}, env)
}

// MainOptions is what a test binary's TestMain decides: the control plane it shares, and how the
// binary behaves around it.
type MainOptions struct {
	// Options is the shared control plane.
	Options
	// QuietKlog discards klog output unless the tests run with -v: simulated kubelets log every
	// error their zombies get, which is the point of some tests and noise in their output.
	QuietKlog bool
	// BenchmarksStartTheirOwn starts no shared control plane in a run of benchmarks only
	// (-run '^$'): each benchmark of the package starts one sized for what it measures.
	BenchmarksStartTheirOwn bool
}

// RunMain is Main with MainOptions:
//
//	func TestMain(m *testing.M) {
//		testenv.RunMain(m, testenv.MainOptions{Options: testenv.Options{AuditPolicy: testenv.AuditNodeLeases}, QuietKlog: true}, &env)
//	}
func RunMain(m *testing.M, opts MainOptions, env **Env) {
	os.Exit(run(m, opts, env))
}

func run(m *testing.M, opts MainOptions, env **Env) int {
	// testing.Verbose and the package's own flags need the command line parsed; m.Run would
	// parse it too, but only after the control plane is up.
	if !flag.Parsed() {
		flag.Parse()
	}
	if opts.QuietKlog && !testing.Verbose() {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	if noTestsRun() || (opts.BenchmarksStartTheirOwn && flagValue("test.run") == "^$") {
		// Listing tests or fuzzing a pure parser needs no control plane; a fuzz worker that started
		// one per process would spend its minute starting etcd. *env stays nil: a test that needs it
		// is not run in these modes.
		return m.Run()
	}
	start := time.Now()
	e, err := Start(context.Background(), opts.Options)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: cannot start the control plane:", err)
		return 1
	}
	defer e.Stop()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testenv: control plane ready in %s at %s\n", time.Since(start).Round(time.Millisecond), e.APIServerURL())
	}
	*env = e

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			e.Stop()
			os.Exit(1)
		}
	}()
	defer signal.Stop(sigs)
	return m.Run()
}

// flagValue is the value of the test binary's flag name, "" when it has none.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// noTestsRun reports a run in which no test needing the control plane runs: -test.list (names
// only), a fuzz worker (it runs only the fuzz function), or a fuzzing coordinator told to run no
// test (-run '^$', as hack/fuzz.sh does; without it the tests run too, and get their control plane).
func noTestsRun() bool {
	switch {
	case flagValue("test.list") != "", flagValue("test.fuzzworker") == "true":
		return true
	case flagValue("test.fuzz") != "" && flagValue("test.run") == "^$":
		return true
	}
	return false
}
