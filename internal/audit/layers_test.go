package audit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/nodekeeper/nodekeeper/internal/"

// kubectlTables is where render takes kubectl's table layout from (printers.GetNewTabWriter).
const kubectlTables = "k8s.io/cli-runtime/pkg/printers"

// The subpackages import one another only downwards (read ← analyze ← render), read needs
// nothing outside the standard library, and render takes every name it prints from the report
// (analyze), never from read, and its tables from kubectl: the package docs say so, this test keeps it true. The test files
// of read and analyze may use the layers above them (gen, and read's external tests analyze);
// render's tests, like render, never read input.
func TestSubpackageImports(t *testing.T) {
	for _, tc := range []struct {
		dir        string
		tests      bool // the _test.go files too
		mayImport  []string
		mustImport []string // so that a renamed package does not pass by importing nothing
	}{
		{dir: "read"},
		{dir: "analyze", mayImport: []string{"audit/read"}, mustImport: []string{"audit/read"}},
		{dir: "render", tests: true, mayImport: []string{"audit/analyze", "textsafe", kubectlTables, "github.com/liggitt/tabwriter"}, mustImport: []string{"audit/analyze"}},
	} {
		imported := map[string]bool{}
		for name, f := range parseDir(t, tc.dir, tc.tests) {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
					continue // standard library
				}
				rel := strings.TrimPrefix(path, module)
				imported[rel] = true
				if !slices.Contains(tc.mayImport, rel) {
					t.Errorf("%s imports %s; %s may import only %v besides the standard library",
						name, path, tc.dir, tc.mayImport)
				}
			}
		}
		for _, want := range tc.mustImport {
			if !imported[want] {
				t.Errorf("%s no longer imports %s: update this test with the new layering", tc.dir, want)
			}
		}
	}
}

// TestNoFacade: this package holds the end-to-end tests only. Callers import read, analyze and
// render directly; no alias or wrapper layer grows back here.
func TestNoFacade(t *testing.T) {
	for name, f := range parseDir(t, ".", false) {
		if len(f.Decls) != 0 {
			t.Errorf("%s declares %d names outside the tests; declare them in read, analyze or render", name, len(f.Decls))
		}
	}
}

// parseDir parses the Go files of dir, by file name.
func parseDir(t *testing.T, dir string, tests bool) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if !tests && strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return files
}
