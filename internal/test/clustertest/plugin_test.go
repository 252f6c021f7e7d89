package clustertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
)

// moduleRoot is the directory of the nodekeeper go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside the nodekeeper module")
	}
	return filepath.Dir(gomod)
}

// pluginPath builds cmd/nodekeeper as <dir>/kubectl-nodekeeper, next to the completion helper
// from deploy/krew, exactly as krew installs them, in a directory removed when the test ends; dir
// goes first on PATH.
func pluginPath(t testing.TB) string {
	t.Helper()
	root := moduleRoot(t)
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-nodekeeper"), "./cmd/nodekeeper")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	helper, err := os.ReadFile(filepath.Join(root, "deploy", "krew", "kubectl_complete-nodekeeper"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-nodekeeper"), helper, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubectl runs the real kubectl with the plugin directory dir first on PATH.
func kubectl(t *testing.T, dir string, extraEnv []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, lerr := exec.LookPath("kubectl")
	if lerr != nil {
		t.Fatalf("kubectl is needed for the plugin test: %v", lerr)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECACHEDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, extraEnv...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func TestKubectlPlugin(t *testing.T) {
	dir := pluginPath(t)
	kc := env.KubeconfigPath()
	t.Run("kubectl nodekeeper leases --kubeconfig -o json", func(t *testing.T) {
		out, errOut, err := kubectl(t, dir, nil, "nodekeeper", "leases", "--kubeconfig", kc, "-o", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var r leasesview.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("output is not a report: %v\n%s", err, out)
		}
		if r.Kind != leasesview.ReportKind || r.Summary.Count(lease.Leader) < 1 || r.Summary.Count(lease.APIServerIdentity) != 1 {
			t.Errorf("report: kind %s, counts %+v", r.Kind, r.Summary.Counts)
		}
	})
	t.Run("KUBECONFIG and -n, table", func(t *testing.T) {
		out, errOut, err := kubectl(t, dir, []string{"KUBECONFIG=" + kc}, "nodekeeper", "leases", "-n", "kube-system")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		for _, want := range []string{"LEADER LEASE", "kube-controller-manager", "APISERVER LEASE", "apiserver-identity", "live", "\nSummary: 0 leaked, 0 zombie,", "API servers: 1 live"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "NAMESPACE") {
			t.Errorf("a single-namespace listing has a NAMESPACE column:\n%s", out)
		}
	})
	t.Run("the binary knows its plugin name", func(t *testing.T) {
		out, errOut, err := kubectl(t, dir, nil, "nodekeeper", "leases", "--help")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		// cobra names a command after the first word of Use, so Use "kubectl nodekeeper" yields
		// "kubectl leases"; the root must keep Use "nodekeeper" and set
		// cobra.CommandDisplayNameAnnotation to "kubectl nodekeeper" instead.
		if !strings.Contains(out, "kubectl nodekeeper leases [flags]") {
			t.Errorf("usage does not say `kubectl nodekeeper leases [flags]` (see cmd/nodekeeper/main.go):\n%s", firstLines(out, 14))
		}
	})
	t.Run("bad class is an error", func(t *testing.T) {
		_, errOut, err := kubectl(t, dir, nil, "nodekeeper", "leases", "--kubeconfig", kc, "--class", "leak")
		if err == nil || !strings.Contains(errOut, `unknown lease class "leak"`) {
			t.Errorf("err %v, stderr %q", err, errOut)
		}
	})
	t.Run("kubectl refuses flags before the plugin name (as the docs say)", func(t *testing.T) {
		_, errOut, err := kubectl(t, dir, nil, "--kubeconfig", kc, "nodekeeper", "leases")
		if err == nil || !strings.Contains(errOut, "flags cannot be placed before plugin name") {
			t.Errorf("kubectl accepted a flag before the plugin name (update docs/kubectl-plugin.md): err %v, stderr %q", err, errOut)
		}
	})
	t.Run("completion through kubectl", func(t *testing.T) {
		tests := []struct {
			args []string
			want []string
		}{
			{[]string{"nodekeeper", "lea"}, []string{"leases"}},
			{[]string{"nodekeeper", "leases", "--class", "le"}, []string{"leaked", "leader"}},
			{[]string{"nodekeeper", "leases", "--class", "leaked,z"}, []string{"leaked,zombie"}},
			{[]string{"nodekeeper", "leases", "-o", ""}, []string{"wide", "json", "yaml", "name", "jsonpath=", "custom-columns="}},
		}
		for _, tt := range tests {
			out, errOut, err := kubectl(t, dir, nil, append([]string{"__complete"}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
			}
			got := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				got[strings.SplitN(l, "\t", 2)[0]] = true
			}
			for _, w := range tt.want {
				if !got[w] {
					t.Errorf("kubectl __complete %v: no %q in\n%s", tt.args, w, out)
				}
			}
		}
	})
}

// TestKrewManifestTemplate renders deploy/krew/nodekeeper.yaml as krew-release-bot does and checks
// what krew needs: every platform has a selector, a URI for this tag, a sha256 and a bin that the
// files list provides.
func TestKrewManifestTemplate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "krew", "nodekeeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"
	tmpl, err := template.New("krew").Funcs(template.FuncMap{
		"addURIAndSha": func(url, tag string) string {
			url = strings.ReplaceAll(url, "{{ .TagName }}", tag)
			return fmt.Sprintf("uri: %s\n    sha256: %x", url, sha256.Sum256([]byte(url)))
		},
	}).Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ TagName string }{tag}); err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				Sha256 string `json:"sha256"`
				Bin    string `json:"bin"`
				Files  []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(out.Bytes(), &m); err != nil {
		t.Fatalf("rendered manifest: %v\n%s", err, out.String())
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "nodekeeper" {
		t.Errorf("header: %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Version != tag || m.Spec.ShortDescription == "" || len(m.Spec.ShortDescription) > 80 || m.Spec.Homepage == "" {
		t.Errorf("spec: version %q, shortDescription %q (krew wants ≤ 80 chars)", m.Spec.Version, m.Spec.ShortDescription)
	}
	if strings.Contains(m.Spec.Caveats, "{{") {
		t.Errorf("caveats keep a template placeholder: %s", m.Spec.Caveats)
	}
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		osArch := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		if seen[osArch] || p.Selector.MatchLabels["os"] == "" || p.Selector.MatchLabels["arch"] == "" {
			t.Errorf("platform selector %q missing or duplicated", osArch)
		}
		seen[osArch] = true
		if !strings.Contains(p.URI, "/"+tag+"/") || len(p.Sha256) != 64 {
			t.Errorf("%s: uri %q sha256 %q", osArch, p.URI, p.Sha256)
		}
		provided := false
		for _, f := range p.Files {
			if f.To == p.Bin {
				provided = true
			}
		}
		if !provided || !strings.HasPrefix(p.Bin, "kubectl-nodekeeper") {
			t.Errorf("%s: bin %q is not installed by files %+v (the binary must be named kubectl-nodekeeper*)", osArch, p.Bin, p.Files)
		}
	}
	// Exactly the platforms GoReleaser builds archives for: one without an archive would point
	// krew at a download that does not exist, and a missing one leaves its users without the plugin.
	want := releasedPlatforms(t)
	for osArch := range seen {
		if !want[osArch] {
			t.Errorf("platform %s has no archive in .goreleaser.yaml", osArch)
		}
	}
	for osArch := range want {
		if !seen[osArch] {
			t.Errorf("no %s platform, though .goreleaser.yaml builds an archive for it", osArch)
		}
	}
}

// releasedPlatforms is the set of os/arch pairs .goreleaser.yaml builds (every goos with every
// goarch of each build).
func releasedPlatforms(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			Goos   []string `json:"goos"`
			Goarch []string `json:"goarch"`
		} `json:"builds"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	out := map[string]bool{}
	for _, b := range cfg.Builds {
		for _, goos := range b.Goos {
			for _, goarch := range b.Goarch {
				out[goos+"/"+goarch] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatal(".goreleaser.yaml builds no platform")
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
