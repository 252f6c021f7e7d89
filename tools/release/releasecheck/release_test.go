// Package releasecheck checks what `make release-snapshot` wrote into dist/: the six archives and
// their checksums, the host archive's binary, the control-plane archives and the sandbox started
// from them (sandbox_test.go), the SBOMs and the krew manifest. It has no non-test
// code and needs a snapshot, so it lives in the tools/release module, outside `go test ./...` of
// the product and outside `make test`; `make release-check` builds the snapshot and runs it:
//
//	RELEASE_DIST=$PWD/dist VERSION=v0.4.0 COMMIT=<sha> go test -count=1 -v ./releasecheck
//
// Without RELEASE_DIST the tests skip, saying so.
package releasecheck

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// platforms are the release targets, in .goreleaser.yaml's terms.
var platforms = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// release is what the environment says the snapshot was built as.
type release struct {
	dist, version, commit string
}

func loadRelease(t *testing.T) release {
	t.Helper()
	r := release{dist: os.Getenv("RELEASE_DIST"), version: os.Getenv("VERSION"), commit: os.Getenv("COMMIT")}
	if r.dist == "" {
		t.Skip("RELEASE_DIST is not set: run `make release-check`, which builds the snapshot first")
	}
	if r.version == "" {
		t.Fatal("VERSION is not set: it must be the version the snapshot was built with (hack/version.sh)")
	}
	return r
}

func archiveName(version, goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("nodekeeper_%s_%s_%s%s", version, goos, goarch, ext)
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checksums reads GoReleaser's checksums file: "<sha256>  <name>" per line.
func checksums(t *testing.T, r release) map[string]string {
	t.Helper()
	name := fmt.Sprintf("nodekeeper_%s_checksums.txt", r.version)
	f, err := os.Open(filepath.Join(r.dist, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s:%d: %q is not \"<sha256>  <file>\"", name, line, sc.Text())
		}
		sums[file] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// Every platform has its archive, listed in the checksums file with its real SHA-256.
func TestArchivesAndChecksums(t *testing.T) {
	r := loadRelease(t)
	sums := checksums(t, r)
	var total int64
	for _, p := range platforms {
		name := archiveName(r.version, p.goos, p.goarch)
		fi, err := os.Stat(filepath.Join(r.dist, name))
		if err != nil {
			t.Errorf("%s/%s: %v", p.goos, p.goarch, err)
			continue
		}
		total += fi.Size()
		t.Logf("%-50s %6.1f MiB", name, float64(fi.Size())/(1<<20))
		if got := fileSHA256(t, filepath.Join(r.dist, name)); sums[name] != got {
			t.Errorf("%s: checksums file says %q, the file hashes to %s", name, sums[name], got)
		}
	}
	t.Logf("six archives: %.1f MiB", float64(total)/(1<<20))
}

// The archive for this machine unpacks to a binary that runs and reports the release's version,
// commit and platform, next to the LICENSE and the kubectl completion helper.
func TestHostArchiveRuns(t *testing.T) {
	r := loadRelease(t)
	archive := filepath.Join(r.dist, archiveName(r.version, runtime.GOOS, runtime.GOARCH))
	dir := t.TempDir()
	names := extract(t, archive, dir, flatName)
	bin := "nodekeeper"
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	for _, want := range []string{bin, "LICENSE", "README.md", "kubectl_complete-nodekeeper"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s holds %v, not %s", filepath.Base(archive), names, want)
		}
	}
	out, err := exec.Command(filepath.Join(dir, bin), "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", bin, err)
	}
	var info struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Version    string `json:"version"`
		Commit     string `json:"commit"`
		BuildDate  string `json:"buildDate"`
		Platform   string `json:"platform"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version -o json printed %q: %v", out, err)
	}
	t.Logf("%s version -o json: %s", bin, strings.TrimSpace(string(out)))
	if info.Kind != "Version" || info.Version != r.version || info.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version document %+v, want kind Version, version %s, platform %s/%s", info, r.version, runtime.GOOS, runtime.GOARCH)
	}
	if r.commit != "" && info.Commit != r.commit {
		t.Errorf("commit %q, want %q", info.Commit, r.commit)
	}
	if info.BuildDate == "" || info.BuildDate == "unknown" {
		t.Errorf("build date %q: the ldflags did not set it", info.BuildDate)
	}
}

// Every binary of nodekeeper's own (the CLI on six platforms, the controller on two) has a
// CycloneDX SBOM naming the nodekeeper module at the release's version.
func TestSBOMs(t *testing.T) {
	r := loadRelease(t)
	var names []string
	for _, p := range platforms {
		names = append(names, fmt.Sprintf("nodekeeper_%s_%s_%s.cdx.json", r.version, p.goos, p.goarch))
		if p.goos == "linux" {
			names = append(names, fmt.Sprintf("nodekeeper-controller_%s_%s_%s.cdx.json", r.version, p.goos, p.goarch))
		}
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(r.dist, name))
		if err != nil {
			t.Error(err)
			continue
		}
		var bom struct {
			BOMFormat string `json:"bomFormat"`
			Metadata  struct {
				Component struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"component"`
			} `json:"metadata"`
			Components []bomComponent `json:"components"`
		}
		if err := json.Unmarshal(data, &bom); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		c := bom.Metadata.Component
		if bom.BOMFormat != "CycloneDX" || !strings.HasSuffix(c.Name, "nodekeeper") || c.Version != r.version {
			t.Errorf("%s: format %q, component %s %s; want CycloneDX, nodekeeper %s", name, bom.BOMFormat, c.Name, c.Version, r.version)
		}
		if !slices.ContainsFunc(bom.Components, func(c bomComponent) bool { return c.Name == "k8s.io/client-go" }) {
			t.Errorf("%s lists %d components, none of them k8s.io/client-go", name, len(bom.Components))
		}
	}
}

type bomComponent struct {
	Name string `json:"name"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Files  []krewFile `json:"files"`
	Bin    string     `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// The krew manifest rendered from the same snapshot names the release's version, one platform
// per archive, with the archive's own SHA-256, and installs files the archive holds.
func TestKrewManifest(t *testing.T) {
	r := loadRelease(t)
	data, err := os.ReadFile(filepath.Join(r.dist, "krew", "nodekeeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Version   string         `json:"version"`
			Platforms []krewPlatform `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.Version != r.version {
		t.Errorf("spec.version %q, want %q", m.Spec.Version, r.version)
	}
	if len(m.Spec.Platforms) != len(platforms) {
		t.Errorf("%d platforms, want %d", len(m.Spec.Platforms), len(platforms))
	}
	for _, p := range m.Spec.Platforms {
		goos, goarch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		want := archiveName(r.version, goos, goarch)
		if path.Base(p.URI) != want || !strings.Contains(p.URI, "/download/"+r.version+"/") {
			t.Errorf("%s/%s: uri %s, want .../download/%s/%s", goos, goarch, p.URI, r.version, want)
			continue
		}
		archive := filepath.Join(r.dist, want)
		if got := fileSHA256(t, archive); p.SHA256 != got {
			t.Errorf("%s/%s: sha256 %s, the archive hashes to %s", goos, goarch, p.SHA256, got)
		}
		names := extract(t, archive, t.TempDir(), flatName)
		for _, f := range p.Files {
			if !slices.Contains(names, f.From) {
				t.Errorf("%s/%s: files.from %q is not in %s (%v)", goos, goarch, f.From, want, names)
			}
		}
		if !slices.ContainsFunc(p.Files, func(f krewFile) bool { return f.To == p.Bin }) {
			t.Errorf("%s/%s: bin %q is not installed by any files entry", goos, goarch, p.Bin)
		}
	}
}
