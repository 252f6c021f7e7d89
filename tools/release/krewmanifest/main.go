// Command krewmanifest renders the krew plugin manifest of a release from its archives.
//
// The template is deploy/krew/nodekeeper.yaml, written for krew-release-bot: {{ .TagName }} is
// the release tag and {{ addURIAndSha "URL" .TagName }} becomes the `uri:` and `sha256:` lines of
// the archive at URL (itself a template of .TagName). krewmanifest gives both the meaning
// krew-release-bot gives them, but reads each archive from the local dist directory that
// GoReleaser wrote instead of downloading it, so a snapshot gets a manifest whose hashes are
// those of the archives beside it:
//
//	go run ./krewmanifest -template ../../deploy/krew/nodekeeper.yaml -dist ../../dist -version v0.4.0
//
// writes dist/krew/nodekeeper.yaml. It fails, naming the archive, when a platform's archive is
// missing, and when the result is not a manifest with one platform per archive.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

func main() {
	var opts options
	flag.StringVar(&opts.templatePath, "template", "deploy/krew/nodekeeper.yaml", "the krew-release-bot template")
	flag.StringVar(&opts.dist, "dist", "dist", "the directory holding the release archives")
	flag.StringVar(&opts.version, "version", "", "the release tag, e.g. v0.4.0 (required)")
	flag.StringVar(&opts.out, "out", "", "where to write the manifest (default: DIST/krew/<template name>)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "krewmanifest: unexpected arguments %q; see -help\n", flag.Args())
		os.Exit(2)
	}
	if err := opts.run(); err != nil {
		fmt.Fprintf(os.Stderr, "krewmanifest: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	templatePath, dist, version, out string
}

// semverTag is what krew accepts as spec.version: v, then a semantic version.
var semverTag = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func (o options) run() error {
	if !semverTag.MatchString(o.version) {
		return fmt.Errorf("-version %q is not a v-prefixed semantic version such as v0.4.0 (krew requires one)", o.version)
	}
	text, err := os.ReadFile(o.templatePath)
	if err != nil {
		return err
	}
	manifest, err := render(string(text), o.version, o.dist)
	if err != nil {
		return fmt.Errorf("%s: %w", o.templatePath, err)
	}
	if err := validate(manifest, o.version); err != nil {
		return fmt.Errorf("rendered %s: %w", o.templatePath, err)
	}
	out := o.out
	if out == "" {
		out = filepath.Join(o.dist, "krew", filepath.Base(o.templatePath))
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, manifest, 0o644); err != nil {
		return err
	}
	fmt.Printf("krewmanifest: wrote %s\n", out)
	return nil
}

// render executes the template with krew-release-bot's data and functions.
func render(text, tag, dist string) ([]byte, error) {
	data := struct{ TagName string }{tag}
	funcs := template.FuncMap{
		"addURIAndSha": func(urlTemplate, tag string) (string, error) {
			url, err := execute("uri", urlTemplate, struct{ TagName string }{tag}, nil)
			if err != nil {
				return "", err
			}
			sum, err := fileSHA256(filepath.Join(dist, path.Base(url)))
			if err != nil {
				return "", fmt.Errorf("the archive of %s: %w", url, err)
			}
			// The same two lines, indented for a platform entry, as krew-release-bot writes.
			return fmt.Sprintf("uri: %s\n    sha256: %s", url, sum), nil
		},
	}
	out, err := execute("manifest", text, data, funcs)
	return []byte(out), err
}

func execute(name, text string, data any, funcs template.FuncMap) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// fileSHA256 is the hex SHA-256 of a file, read in a stream.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Manifest is the part of a krew Plugin that the release decides.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string     `json:"version"`
		Platforms []Platform `json:"platforms"`
	} `json:"spec"`
}

// Platform is one archive of a krew manifest.
type Platform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Files  []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
	Bin string `json:"bin"`
}

// parse reads the parts of a krew manifest that Manifest models.
func parse(data []byte) (Manifest, error) {
	var m Manifest
	err := yaml.Unmarshal(data, &m)
	return m, err
}

// validate checks what krew itself would refuse: the kind, the version, and every platform with
// an os/arch selector, a URI and a SHA-256.
func validate(data []byte, version string) error {
	m, err := parse(data)
	if err != nil {
		return err
	}
	var errs []error
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		errs = append(errs, fmt.Errorf("apiVersion/kind %s/%s, want krew.googlecontainertools.github.com/v1alpha2/Plugin", m.APIVersion, m.Kind))
	}
	if m.Spec.Version != version {
		errs = append(errs, fmt.Errorf("spec.version %q, want %q", m.Spec.Version, version))
	}
	if len(m.Spec.Platforms) == 0 {
		errs = append(errs, errors.New("no platforms"))
	}
	seen := map[string]bool{}
	for i, p := range m.Spec.Platforms {
		key := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
			errs = append(errs, fmt.Errorf("platform %d has no os and arch selector", i))
		}
		if seen[key] {
			errs = append(errs, fmt.Errorf("platform %s listed twice", key))
		}
		seen[key] = true
		if p.URI == "" || len(p.SHA256) != 64 || p.Bin == "" {
			errs = append(errs, fmt.Errorf("platform %s lacks uri, sha256 or bin", key))
		}
	}
	return errors.Join(errs...)
}
