package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// execute runs a fresh command tree in-process, as main does (as the kubectl plugin with
// plugin), and returns what it wrote and its exit code.
func execute(t *testing.T, plugin bool, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, (&fakeAWS{}).load)
	if plugin {
		AsKubectlPlugin(root)
	}
	root.SetArgs(args)
	code = cli.Execute(context.Background(), root, &errb)
	return out.String(), errb.String(), code
}

// TestRootCommand: every subcommand is on the tree, output goes to the given streams, and the
// plugin name shows in usage only when asked for.
func TestRootCommand(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		plugin    bool
		wantOut   []string
		notOut    []string
		wantCode  int
		wantError string
	}{
		{name: "help lists every subcommand", args: []string{"--help"},
			wantOut: []string{"audit", "bundle", "controller", "doctor", "gc", "leases", "maxpods", "plan", "sandbox", "version", "completion", "nodekeeper [command]"}},
		{name: "plugin usage", args: []string{"leases", "--help"}, plugin: true,
			wantOut: []string{"kubectl nodekeeper leases [flags]"}},
		{name: "binary usage", args: []string{"leases", "--help"},
			wantOut: []string{"nodekeeper leases [flags]"}, notOut: []string{"kubectl nodekeeper leases [flags]"}},
		{name: "version", args: []string{"version", "-o", "json"}, wantOut: []string{`"version"`, `"goVersion"`}},
		{name: "maxpods", args: []string{"maxpods", "m5.large", "-o", "value"}, wantOut: []string{"29\n"}},
		{name: "bad -o", args: []string{"maxpods", "m5.large", "-o", "xml"}, wantCode: 2,
			wantError: `unknown output format "xml" (want text, json or value)`},
		{name: "unknown command", args: []string{"nosuch"}, wantCode: 2, wantError: `unknown command "nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := execute(t, tc.plugin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.wantCode, errOut)
			}
			textcheck.Contains(t, "stdout", out, tc.wantOut, tc.notOut)
			if tc.wantError != "" && !strings.Contains(errOut, "error: "+tc.wantError) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantError, errOut)
			}
		})
	}
}

// TestRootCommandsShareNothing: two trees built side by side keep their own flags: a
// connection flag or an output format set on one is not seen by the other, so tests (and any
// embedding program) need no reset between runs.
func TestRootCommandsShareNothing(t *testing.T) {
	var outA, outB bytes.Buffer
	a := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &outA, ErrOut: &outA})
	b := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &outB, ErrOut: &outB})
	a.SetArgs([]string{"leases", "--namespace", "from-a", "--help"})
	if code := cli.Execute(context.Background(), a, &outA); code != 0 {
		t.Fatalf("a: exit %d: %s", code, outA.String())
	}
	outA.Reset()
	a.SetArgs([]string{"version", "-o", "json"})
	if code := cli.Execute(context.Background(), a, &outA); code != 0 {
		t.Fatalf("a: exit %d: %s", code, outA.String())
	}
	b.SetArgs([]string{"version"})
	if code := cli.Execute(context.Background(), b, &outB); code != 0 {
		t.Fatalf("b: exit %d: %s", code, outB.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(outA.Bytes(), &doc); err != nil {
		t.Errorf("a's -o json: %v\n%s", err, outA.String())
	}
	if !strings.HasPrefix(outB.String(), "nodekeeper ") {
		t.Errorf("b printed JSON or nothing; a's -o leaked into it:\n%s", outB.String())
	}
	leasesA, _, _ := a.Find([]string{"leases"})
	leasesB, _, _ := b.Find([]string{"leases"})
	if ns, _ := leasesA.Flags().GetString("namespace"); ns != "from-a" {
		t.Fatalf("a's --namespace is %q: the test did not set it", ns)
	}
	if ns, _ := leasesB.Flags().GetString("namespace"); ns != "" {
		t.Errorf("b's --namespace is %q, set on a", ns)
	}
}
