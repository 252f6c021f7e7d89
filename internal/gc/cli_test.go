package gc_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/cmd/nodekeeper/app"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/gc"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// runGC runs `nodekeeper gc args...` in-process with cfg's identity, as main does (same error
// printing and exit code); stdin is not a terminal.
func runGC(t *testing.T, cfg *rest.Config, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := gc.TestEnv().WriteKubeconfig(kc, cfg); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	root := app.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e})
	root.SetArgs(append([]string{"gc", "--kubeconfig", kc}, args...))
	code = cli.Execute(context.Background(), root, &e)
	return o.String(), e.String(), code
}

func TestCLI(t *testing.T) {
	env := gc.TestEnv()
	byClass := gc.MixedCluster(t)
	leaked := byClass[lease.Leaked]

	t.Run("bad flags exit 2", func(t *testing.T) {
		if _, stderr, code := runGC(t, env.AdminConfig(), "--grace-period=0s"); code != 2 {
			t.Errorf("exit %d, want 2: %s", code, stderr)
		}
		for _, bad := range [][]string{{"-o", "xml"}, {"--name-regexp", "ip-("}, {"--limit", "-1"}, {"-o", "jsonpath={.items[*"}, {"--sort-by", "{.x"}} {
			if _, stderr, code := runGC(t, env.AdminConfig(), bad...); code != 2 {
				t.Errorf("%v: exit %d, want 2: %s", bad, code, stderr)
			}
		}
		if _, stderr, code := runGC(t, env.AdminConfig(), "--workers", "many"); code != 2 {
			t.Errorf("a flag value cobra refuses: exit %d, want 2: %s", code, stderr)
		}
	})
	t.Run("no terminal and no --yes: exit 2 (bad usage), nothing deleted", func(t *testing.T) {
		stdout, stderr, code := runGC(t, env.AdminConfig())
		if code != 2 || !strings.Contains(stderr, "--yes") {
			t.Errorf("exit %d, want 2 with a hint to --yes: %s", code, stderr)
		}
		if !strings.Contains(stdout, "leaked") || !strings.Contains(stdout, "5 leaked; 5 will be deleted") {
			t.Errorf("summary missing:\n%s", stdout)
		}
		for _, n := range leaked {
			if !gc.TestEnv().NodeLeaseExists(t, n) {
				t.Fatalf("%s deleted without confirmation", n)
			}
		}
	})
	t.Run("dry run with -o json", func(t *testing.T) {
		stdout, stderr, code := runGC(t, env.AdminConfig(), "--dry-run", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		doc, err := gc.ParseReport([]byte(stdout))
		if err != nil {
			t.Fatal(err)
		}
		if !doc.DryRun || doc.Classes["leaked"] != 5 || doc.Outcomes[deleter.WouldDelete] != 5 || len(doc.Results) != 5 {
			t.Errorf("report %+v", doc)
		}
		if !strings.Contains(stderr, "CLASS") {
			t.Errorf("the summary table belongs on stderr with -o json; stderr:\n%s", stderr)
		}
	})
	t.Run("an identity that may not delete: exit 4, nothing deleted", func(t *testing.T) {
		user := "gc-reader"
		gc.GrantReadOnly(t, user)
		stdout, stderr, code := runGC(t, env.UserConfig(user), "--yes")
		if code != 4 {
			t.Fatalf("exit %d, want 4\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "failed") || !strings.Contains(stdout, "forbidden") {
			t.Errorf("failures not reported:\n%s", stdout)
		}
	})
	t.Run("--limit 1 -o name deletes one lease and prints its name", func(t *testing.T) {
		stdout, stderr, code := runGC(t, env.AdminConfig(), "--yes", "--limit", "1", "-o", "name")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		lines := strings.Fields(stdout)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "lease.coordination.k8s.io/") {
			t.Fatalf("stdout %q: want exactly one lease name", stdout)
		}
		name := strings.TrimPrefix(lines[0], "lease.coordination.k8s.io/")
		if !strings.Contains(stderr, "Deleted 1 of 9 leases") || !strings.Contains(stderr, "4 over-limit") {
			t.Errorf("summary on stderr does not say 1 deleted and 4 left by the limit:\n%s", stderr)
		}
		for class, names := range byClass {
			for _, n := range names {
				if gone := !gc.TestEnv().NodeLeaseExists(t, n); gone != (n == name) {
					t.Errorf("%s lease %s: gone=%v, only %s should be", class, n, gone, name)
				}
			}
		}
		// Put it back for the next test.
		if _, err := kubeletsim.SeedOldLeakedLease(context.Background(), env.AdminClient(), env, name, time.Now().Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("--yes deletes exactly the leaked leases: exit 0", func(t *testing.T) {
		stdout, stderr, code := runGC(t, env.AdminConfig(), "--yes", "--qps", "0")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "5 deleted") {
			t.Errorf("result line missing:\n%s", stdout)
		}
		for class, names := range byClass {
			for _, n := range names {
				if gone := !gc.TestEnv().NodeLeaseExists(t, n); gone != (class == lease.Leaked) {
					t.Errorf("%s lease %s: gone=%v", class, n, gone)
				}
			}
		}
	})
	t.Run("nothing to do: exit 0", func(t *testing.T) {
		stdout, stderr, code := runGC(t, env.AdminConfig())
		if code != 0 || !strings.Contains(stdout, "0 leaked; 0 will be deleted") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
}
