package audit

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFacade: this package holds the end-to-end tests only. Callers import read, analyze and
// render directly; no alias or wrapper layer grows back here. The layers' imports (read ←
// analyze ← render, render never reaching into read) are rules of internal/test/archtest.
func TestNoFacade(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files (%v)", err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Decls) != 0 {
			t.Errorf("%s declares %d names outside the tests; declare them in read, analyze or render", name, len(f.Decls))
		}
	}
}
