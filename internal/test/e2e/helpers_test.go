//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The names `aws eks update-kubeconfig --name demo --region us-west-2` gives the cluster, the
// context and the user of the kubeconfig it writes.
const (
	eksClusterName = "demo"
	eksRegion      = "us-west-2"
	eksARN         = "arn:aws:eks:" + eksRegion + ":111122223333:cluster/" + eksClusterName
)

// commandTimeout bounds one run of a command that should end by itself; it only catches a hang,
// and is generous so that a loaded machine never trips it.
const commandTimeout = 5 * time.Minute

// The exit codes of docs/exit-codes.md.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitFindings = 3
)

// user is one person at a shell: a home directory, a temporary directory, the environment
// variables they set, and the binary on disk.
type user struct {
	t    *testing.T
	home string
	tmp  string
	dir  string // the working directory
	vars []string
}

// newUser returns a user with an empty home and temporary directory and only PATH from the
// test's environment: no KUBECONFIG, no AWS variables, nothing else a developer's shell holds.
func newUser(t *testing.T) *user {
	t.Helper()
	root := t.TempDir()
	u := &user{t: t, home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp"), dir: filepath.Join(root, "work")}
	for _, d := range []string{u.home, u.tmp, u.dir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// setenv adds NAME=VALUE to the user's environment.
func (u *user) setenv(name, value string) { u.vars = append(u.vars, name+"="+value) }

func (u *user) environ() []string {
	return append([]string{"HOME=" + u.home, "TMPDIR=" + u.tmp, "PATH=" + os.Getenv("PATH"),
		// Loopback addresses are never proxied; anything else (a public AWS endpoint, were the
		// binary to ignore AWS_ENDPOINT_URL) goes to a proxy that refuses, so no run of these
		// tests reaches beyond the machine, whatever the binary does.
		"HTTPS_PROXY=" + deadProxy, "HTTP_PROXY=" + deadProxy, "NO_PROXY="}, u.vars...)
}

// deadProxy is an address nothing listens on (port 1, tcpmux, is unused on test machines).
const deadProxy = "http://127.0.0.1:1"

// result is what a finished command left: its output and exit code.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("nodekeeper %s: exit %d\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(r.args, " "), r.code, clip(r.stdout), clip(r.stderr))
}

func clip(s string) string {
	const max = 8000
	if len(s) > max {
		return s[:max/2] + "\n[...]\n" + s[len(s)-max/2:]
	}
	return s
}

// binary is the path of bin/NAME.
func binary(name string) string { return filepath.Join(binDir, name) }

// command prepares bin/nodekeeper with args for the user, without starting it.
func (u *user) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = u.environ()
	cmd.Dir = u.dir
	cmd.Stdin = nil // /dev/null: no terminal to answer a prompt
	return cmd
}

// run runs bin/nodekeeper with args to its end and returns what it printed and its exit code.
func (u *user) run(args ...string) result {
	u.t.Helper()
	return u.runBinary(binary("nodekeeper"), args...)
}

func (u *user) runBinary(bin string, args ...string) result {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := u.command(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		u.t.Fatalf("still running after %s (killed):\n%s", commandTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if r.code < 0 {
			u.t.Fatalf("ended by %v:\n%s", ee, r)
		}
	case err != nil:
		u.t.Fatalf("cannot run %s: %v", bin, err)
	}
	return r
}

// expect runs args and fails the test unless the command exits with code.
func (u *user) expect(code int, args ...string) result {
	u.t.Helper()
	r := u.run(args...)
	if r.code != code {
		u.t.Fatalf("want exit code %d, got:\n%s", code, r)
	}
	return r
}

// decode checks the command's standard output against the JSON schema of its kind (every -o json
// document nodekeeper writes has one) and parses it into the part of the document T holds.
func decode[T any](t *testing.T, r result, kind string) T {
	t.Helper()
	schematest.Validate(t, kind, []byte(r.stdout))
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("standard output is not one JSON document: %v\n%s", err, r)
	}
	return v
}

// mustContain fails unless s holds every one of want.
func mustContain(t *testing.T, r result, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, r)
		}
	}
}

// eksKubeconfig is a kubeconfig as `aws eks update-kubeconfig` writes it (cluster, context and
// user all named by the cluster's ARN), pointing at the shared control plane, with a client
// certificate instead of the exec plugin. extra contexts may be added by the caller.
func eksKubeconfig(cfg *rest.Config) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[eksARN] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[eksARN] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[eksARN] = &clientcmdapi.Context{Cluster: eksARN, AuthInfo: eksARN}
	kc.CurrentContext = eksARN
	return kc
}

// adminUser is the identity the tests' kubeconfigs carry: a cluster administrator, as the
// creator of an EKS cluster is.
func adminUser() *rest.Config { return env.UserConfig("e2e-admin", "system:masters") }

// writeKubeconfig writes kc as the user's file NAME (0600) and returns its path.
func (u *user) writeKubeconfig(name string, kc *clientcmdapi.Config) string {
	u.t.Helper()
	p := filepath.Join(u.home, name)
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		u.t.Fatal(err)
	}
	return p
}

// eksUser is a user whose KUBECONFIG is the ARN-named kubeconfig of the shared control plane.
func eksUser(t *testing.T) (*user, string) {
	u := newUser(t)
	p := u.writeKubeconfig("eks.kubeconfig", eksKubeconfig(adminUser()))
	u.setenv("KUBECONFIG", p)
	return u, p
}

// readAll returns the file's content, failing the test on error.
func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
