package audit

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The subpackages import one another only downwards (read ← analyze ← render), and read needs
// nothing outside the standard library: the package docs say so, this test keeps it true.
func TestSubpackageImports(t *testing.T) {
	const module = "github.com/nodekeeper/nodekeeper/internal/"
	allowed := map[string][]string{
		"read":    nil,
		"analyze": {module + "audit/read"},
		"render":  {module + "audit/read", module + "audit/analyze", module + "textsafe"},
	}
	for dir, ok := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
					continue // standard library
				}
				if !slices.Contains(ok, path) {
					t.Errorf("%s imports %s; %s may import only %v besides the standard library", name, path, dir, ok)
				}
			}
		}
	}
}
