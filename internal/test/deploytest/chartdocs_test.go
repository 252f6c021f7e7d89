package deploytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

const (
	chartReadme        = chartDir + "/README.md"
	valuesTableBegin   = "<!-- values table: generated from values.yaml by `go test ./internal/test/deploytest -run TestChartReadme -update` -->\n"
	valuesTableEnd     = "<!-- end of values table -->\n"
	valuesTableHeading = "| value | default | description |\n|---|---|---|\n"
)

// valueRow is one line of the chart README's values table.
type valueRow struct {
	path, def, doc string
}

// valuesTable walks values.yaml and returns one row per documented section and per leaf value,
// with the comment above each key as its description. A leaf with no comment of its own or of a
// section above it is an error: every value must be explained where it is defined.
func valuesTable(data []byte) ([]valueRow, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yamlv3.MappingNode {
		return nil, errors.New("values.yaml is not a mapping")
	}
	var rows []valueRow
	var errs []error
	var walk func(m *yamlv3.Node, prefix string, documented bool)
	walk = func(m *yamlv3.Node, prefix string, documented bool) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, value := m.Content[i], m.Content[i+1]
			path := prefix + key.Value
			comment := commentText(key.HeadComment)
			if value.Kind == yamlv3.MappingNode && len(value.Content) > 0 {
				if comment != "" {
					rows = append(rows, valueRow{path: path, doc: comment})
				}
				walk(value, path+".", documented || comment != "")
				continue
			}
			if comment == "" && !documented {
				errs = append(errs, fmt.Errorf("values.yaml line %d: %s has no comment above it, nor has any section it is in", key.Line, path))
			}
			def, err := compactJSON(value)
			if err != nil {
				errs = append(errs, fmt.Errorf("values.yaml line %d: %s: %w", key.Line, path, err))
			}
			rows = append(rows, valueRow{path: path, def: def, doc: comment})
		}
	}
	walk(doc.Content[0], "", false)
	return rows, errors.Join(errs...)
}

// commentText joins a YAML head comment's lines into one sentence run, dropping the "#" marks and
// the blank line that separates a file header from the first key.
func commentText(c string) string {
	var parts []string
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if line == "" {
			parts = nil // a paragraph break: only the paragraph next to the key describes it
			continue
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, " ")
}

func compactJSON(n *yamlv3.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func renderValuesTable(rows []valueRow) string {
	var b strings.Builder
	b.WriteString(valuesTableHeading)
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range rows {
		def := ""
		if r.def != "" {
			def = "`" + cell(r.def) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.path, def, cell(r.doc))
	}
	return b.String()
}

// The chart README's values table is values.yaml's keys, defaults and comments, so it cannot drift;
// -update rewrites it.
func TestChartReadme(t *testing.T) {
	rows, err := valuesTable(readRepoFile(t, chartDir+"/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(readRepoFile(t, chartReadme))
	begin := strings.Index(readme, valuesTableBegin)
	end := strings.Index(readme, valuesTableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q ... %q section", chartReadme, valuesTableBegin, valuesTableEnd)
	}
	want := readme[:begin] + valuesTableBegin + renderValuesTable(rows) + readme[end:]
	if *update {
		if err := os.WriteFile(repoPath(t, chartReadme), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if readme != want {
		t.Errorf("%s's values table is out of date with values.yaml; run: go test ./internal/test/deploytest -run TestChartReadme -update", chartReadme)
	}
}

func TestValuesTable(t *testing.T) {
	for _, tc := range []struct {
		name, values, wantTable, wantErr string
	}{
		{name: "leaf comments and defaults",
			values:    "# Header.\n\n# Replicas.\nreplicaCount: 2\nimage:\n  # The tag.\n  tag: \"\"\n",
			wantTable: valuesTableHeading + "| `replicaCount` | `2` | Replicas. |\n| `image.tag` | `\"\"` | The tag. |\n"},
		{name: "documented section, undocumented leaves",
			values:    "# Pod security | non-root.\npod:\n  runAsUser: 65532\n  drop: [ALL]\n",
			wantTable: valuesTableHeading + "| `pod` |  | Pod security \\| non-root. |\n| `pod.runAsUser` | `65532` |  |\n| `pod.drop` | `[\"ALL\"]` |  |\n"},
		{name: "undocumented leaf", values: "# A.\na: 1\nb: {}\n", wantErr: "values.yaml line 3: b has no comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := valuesTable([]byte(tc.values))
			if textcheck.WantError(t, err, tc.wantErr) {
				return
			}
			if got := renderValuesTable(rows); got != tc.wantTable {
				t.Errorf("table:\n%s\nwant:\n%s", got, tc.wantTable)
			}
		})
	}
}

// `helm package` stamps the chart with the Makefile's version (chart-package passes VERSION
// without its v as both --version and --app-version), and the packaged chart's default image is
// the release's image tag, v + appVersion: one version for the chart, the image and the binary.
func TestHelmPackage(t *testing.T) {
	const version = "1.2.3-4-gabc123def456"
	dir := t.TempDir()
	trackInputs(t, chartDir)
	out, err := run(repoRoot(t), nil, helm(t), "package", chartDir, "--version", version, "--app-version", version, "--destination", dir)
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "nodekeeper-"+version+".tgz")
	if !strings.Contains(string(out), pkg) {
		t.Errorf("helm package printed %q, want it to name %s", out, pkg)
	}
	files := readTarGz(t, pkg)
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["nodekeeper/Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != version || chart.AppVersion != version {
		t.Errorf("packaged Chart.yaml version %q appVersion %q, want %q for both", chart.Version, chart.AppVersion, version)
	}
	for _, want := range []string{"nodekeeper/README.md", "nodekeeper/values.schema.json", "nodekeeper/files/nodekeeper.rules.yaml", "nodekeeper/templates/deployment.yaml"} {
		if files[want] == nil {
			t.Errorf("the package lacks %s", want)
		}
	}
	if _, err := run(repoRoot(t), nil, helm(t), "lint", "--strict", pkg); err != nil {
		t.Errorf("helm lint of the package: %v", err)
	}
	rendered, err := run(repoRoot(t), nil, helm(t), "template", "nodekeeper", pkg, "--namespace", "nodekeeper")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseManifests(rendered)
	if err != nil {
		t.Fatal(err)
	}
	img := controllerContainer(t, mustTyped[*appsv1.Deployment](t, ofKind(objs, "Deployment")[0])).Image
	if want := "ghcr.io/nodekeeper/nodekeeper:v" + version; img != want {
		t.Errorf("packaged chart's default image %s, want %s", img, want)
	}
	// The Makefile's chart-package target passes the same version to both flags, without the v.
	plan := makeDryRun(t, "chart-package", "VERSION=v"+version)
	if !strings.Contains(plan, "package deploy/helm/nodekeeper --version "+version+" --app-version "+version+" ") {
		t.Errorf("make -n chart-package VERSION=v%s does not package with --version %s --app-version %s:\n%s", version, version, version, plan)
	}
}

// readTarGz returns the regular files of a small .tgz by name.
func readTarGz(t *testing.T, p string) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, io.LimitReader(tr, 10<<20)); err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b.Bytes()
	}
}
