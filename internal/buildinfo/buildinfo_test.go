package buildinfo

import (
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"

	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestResolve(t *testing.T) {
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-23T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}
	tests := []struct {
		name          string
		v, c, d       string
		bi            *debug.BuildInfo
		wantV, wantC  string
		wantBuildDate string
	}{
		{"linker values win", "v0.4.0-3-gabc1234", "abc1234abc1234abc1234abc1234abc1234abc12", "2026-11-23T12:00:00Z", checkout,
			"v0.4.0-3-gabc1234", "abc1234abc1234abc1234abc1234abc1234abc12", "2026-11-23T12:00:00Z"},
		{"go build in a checkout", "", "", "", checkout, "dev", "0123456789abcdef0123456789abcdef01234567-dirty", "2026-11-23T10:00:00Z"},
		{"go install @version", "", "", "", installed, "v0.4.0", "unknown", "unknown"},
		{"nothing recorded", "", "", "", nil, "dev", "unknown", "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.v, tc.c, tc.d, tc.bi)
			if got.Version != tc.wantV || got.Commit != tc.wantC || got.BuildDate != tc.wantBuildDate {
				t.Errorf("got %+v, want version %q commit %q date %q", got, tc.wantV, tc.wantC, tc.wantBuildDate)
			}
			if got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
				t.Errorf("go %q platform %q", got.GoVersion, got.Platform)
			}
			if got.APIVersion != APIVersion || got.Kind != Kind {
				t.Errorf("TypeMeta = %+v", got.TypeMeta)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	i := resolve("v0.4.0", "abc1234abc1234abc1234abc1234abc1234abc12", "2026-11-23T12:00:00Z", nil)
	var text bytes.Buffer
	if err := Print(&text, i, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nodekeeper v0.4.0\n", "commit:     abc1234abc1234", "built:      2026-11-23T12:00:00Z", "go:         go", "platform:   " + runtime.GOOS} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		if err := Print(&out, i, format); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, Kind, out.Bytes())
		// JSON is YAML: one reader for both (the schema check above parses JSON strictly).
		var m map[string]string
		if err := yaml.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out.String())
		}
		want := map[string]string{"apiVersion": APIVersion, "kind": Kind, "version": "v0.4.0", "commit": i.Commit,
			"buildDate": "2026-11-23T12:00:00Z", "goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %q, want %q", format, k, m[k], v)
			}
		}
	}
	if err := Print(&bytes.Buffer{}, i, "xml"); err == nil || !strings.Contains(err.Error(), "text, json, yaml") {
		t.Errorf("Print -o xml: %v", err)
	}
	if s := i.String(); s != "v0.4.0 (abc1234abc12, "+runtime.GOOS+"/"+runtime.GOARCH+")" {
		t.Errorf("String = %q", s)
	}
}
