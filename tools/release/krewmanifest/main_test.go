package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testTemplate = `apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: nodekeeper
spec:
  version: {{ .TagName }}
  platforms:
  - selector:
      matchLabels:
        os: linux
        arch: amd64
    {{addURIAndSha "https://example.invalid/download/{{ .TagName }}/nk_{{ .TagName }}_linux_amd64.tar.gz" .TagName }}
    bin: kubectl-nodekeeper
`

func TestRender(t *testing.T) {
	dist := t.TempDir()
	archive := []byte("archive bytes")
	if err := os.WriteFile(filepath.Join(dist, "nk_v1.2.3_linux_amd64.tar.gz"), archive, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, template, version string
		want                    string // a line of the output, or the error's text
		wantErr                 bool
	}{
		{name: "hash of the local archive", template: testTemplate, version: "v1.2.3",
			want: fmt.Sprintf("    sha256: %x\n", sha256.Sum256(archive))},
		{name: "uri of the tag", template: testTemplate, version: "v1.2.3",
			want: "    uri: https://example.invalid/download/v1.2.3/nk_v1.2.3_linux_amd64.tar.gz\n"},
		{name: "archive missing", template: testTemplate, version: "v1.2.4", wantErr: true,
			want: "nk_v1.2.4_linux_amd64.tar.gz"},
		{name: "unknown field", template: "{{ .Tag }}", version: "v1.2.3", wantErr: true, want: "Tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(tc.template, tc.version, dist)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if err := validate(out, tc.version); err != nil {
				t.Errorf("validate: %v", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nspec:\n  version: v1.0.0\n  platforms:\n" +
		"  - selector: {matchLabels: {os: linux, arch: amd64}}\n    uri: u\n    sha256: " + strings.Repeat("a", 64) + "\n    bin: b\n"
	for _, tc := range []struct {
		name, manifest, version, wantErr string
	}{
		{"valid", good, "v1.0.0", ""},
		{"other version", good, "v1.0.1", `spec.version "v1.0.0", want "v1.0.1"`},
		{"no platforms", "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nspec: {version: v1.0.0}\n", "v1.0.0", "no platforms"},
		{"short sha", strings.Replace(good, strings.Repeat("a", 64), "abc", 1), "v1.0.0", "lacks uri, sha256 or bin"},
		{"duplicate platform", good + strings.SplitN(good, "platforms:\n", 2)[1], "v1.0.0", "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate([]byte(tc.manifest), tc.version)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestVersionMustBeSemver(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.4.0": true, "v0.0.0-0-gabc123def456-dirty": true, "v1.2.3-3-gabc": true,
		"0.4.0": false, "abc1234": false, "v1.2": false, "v01.2.3": false,
	} {
		if got := semverTag.MatchString(v); got != ok {
			t.Errorf("%q: accepted %v, want %v", v, got, ok)
		}
	}
}
