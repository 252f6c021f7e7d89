package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// Main is a TestMain body: it starts one control plane for the whole test package, stores it in
// *env, runs the tests and tears it down, also on SIGINT/SIGTERM. A package whose tests cannot
// start a control plane fails loudly instead of silently skipping.
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{ControllerManager: true}, &env) }
func Main(m *testing.M, opts Options, env **Env) {
	os.Exit(run(m, opts, env))
}

func run(m *testing.M, opts Options, env **Env) int {
	// testing.Verbose and the package's own flags need the command line parsed; m.Run would
	// parse it too, but only after the control plane is up.
	if !flag.Parsed() {
		flag.Parse()
	}
	if noTestsRun() {
		// Listing tests or fuzzing a pure parser needs no control plane; a fuzz worker that started
		// one per process would spend its minute starting etcd. *env stays nil: a test that needs it
		// is not run in these modes.
		return m.Run()
	}
	start := time.Now()
	e, err := Start(context.Background(), opts)
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

// noTestsRun reports a run in which no test needing the control plane runs: -test.list (names
// only), a fuzz worker (it runs only the fuzz function), or a fuzzing coordinator told to run no
// test (-run '^$', as hack/fuzz.sh does; without it the tests run too, and get their control plane).
func noTestsRun() bool {
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	switch {
	case value("test.list") != "", value("test.fuzzworker") == "true":
		return true
	case value("test.fuzz") != "" && value("test.run") == "^$":
		return true
	}
	return false
}
