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
