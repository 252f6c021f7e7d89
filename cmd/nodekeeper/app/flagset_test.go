package app

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodekeeper/nodekeeper/internal/test/golden"
)

// TestFlagSetGolden records every command's flags (name, shorthand, type, default) in
// testdata/flags.golden, so that a change of wiring (the kubectl connection flags, the output
// flags) cannot drop, rename or retype a flag users pass today without the diff showing it.
// A flag added or changed on purpose is recorded with
//
//	go test ./cmd/nodekeeper/app -run TestFlagSetGolden -update
//
// and its diff read line by line before the commit.
func TestFlagSetGolden(t *testing.T) {
	// --cache-dir's default is under the home directory, unless KUBECACHEDIR names another.
	t.Setenv("HOME", "/home/user")
	t.Setenv("KUBECACHEDIR", "")
	if err := os.Unsetenv("KUBECACHEDIR"); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, (&fakeAWS{}).load)
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fmt.Fprintf(&b, "%s\n", c.CommandPath())
		for _, line := range flagLines(c) {
			fmt.Fprintf(&b, "  %s\n", line)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	golden.Assert(t, "testdata/flags.golden", []byte(b.String()))
}

// flagLines are a command's flags, its own and those it inherits, one line each, sorted.
func flagLines(c *cobra.Command) []string {
	var lines []string
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if seen[f.Name] {
			return
		}
		seen[f.Name] = true
		short := ""
		if f.Shorthand != "" {
			short = " -" + f.Shorthand
		}
		hidden := ""
		if f.Hidden || f.Deprecated != "" {
			hidden = " (hidden)"
		}
		lines = append(lines, fmt.Sprintf("--%s%s %s default=%q%s", f.Name, short, f.Value.Type(), f.DefValue, hidden))
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	sort.Strings(lines)
	return lines
}
