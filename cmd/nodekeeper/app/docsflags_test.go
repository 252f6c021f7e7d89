package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The defaults in the flag tables of docs/COMMAND.md are the flags' real defaults. A row names one
// or more flags (`--qps`, `--burst`) and as many defaults separated by commas (100, 300); a
// default that is not a literal (from aws-node, $POD_NAMESPACE) or a row whose counts differ is
// left alone. Durations compare by value (1h is 1h0m0s).
func TestDocsFlagDefaults(t *testing.T) {
	root := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: os.Stdout, ErrOut: os.Stderr})
	flagName := regexp.MustCompile("`(--?[a-z][a-z0-9-]*)")
	checked := 0
	for _, name := range []string{"gc", "controller", "doctor", "bundle", "leases", "audit", "maxpods", "plan"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd == root {
			t.Fatalf("no command %s: %v", name, err)
		}
		inTable := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "| flag | default") {
				inTable = true
				continue
			}
			if !strings.HasPrefix(line, "|") {
				inTable = false
				continue
			}
			if !inTable || strings.HasPrefix(line, "|---") {
				continue
			}
			cells := strings.Split(line, " | ")
			if len(cells) < 2 {
				continue
			}
			var flags []string
			for _, m := range flagName.FindAllStringSubmatch(cells[0], -1) {
				flags = append(flags, strings.TrimLeft(m[1], "-"))
			}
			defaults := strings.Split(strings.TrimSpace(cells[1]), ", ")
			if len(flags) == 0 || len(flags) != len(defaults) {
				continue
			}
			for i, fl := range flags {
				want := strings.Trim(strings.TrimSpace(defaults[i]), "`")
				if want == "" || strings.ContainsAny(want, " $") {
					continue
				}
				f := lookupFlag(cmd, fl)
				if f == nil {
					if len(fl) > 1 {
						t.Errorf("docs/%s.md: %s has no flag --%s", name, name, fl)
					}
					continue
				}
				checked++
				real := f.DefValue
				if m := usageDefault.FindStringSubmatch(f.Usage); real == "" && m != nil {
					real = m[1] // an empty flag means the default its usage names
				}
				if !sameDefault(want, real) {
					t.Errorf("docs/%s.md says --%s defaults to %q; the flag's default is %q", name, fl, want, real)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d documented defaults checked", checked)
	}
}

var usageDefault = regexp.MustCompile(`\(default ([^)\s]+)\)`)

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

func sameDefault(doc, real string) bool {
	if doc == real {
		return true
	}
	d1, err1 := time.ParseDuration(doc)
	d2, err2 := time.ParseDuration(real)
	return err1 == nil && err2 == nil && d1 == d2
}
