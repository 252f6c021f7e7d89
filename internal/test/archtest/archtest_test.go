package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nodekeeper/nodekeeper"

// pkg is what `go list` says of one package, with the module's paths made relative.
type pkg struct {
	ImportPath   string
	Imports      []string // of the non-test files
	TestImports  []string
	XTestImports []string
}

// list runs `go list` over the module for goos: build tags may change a package's imports from
// one platform to another, and the binaries are released for three.
func list(t *testing.T, goos string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error", module+"/...")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p struct {
			pkg
			Error *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Errorf("go list %s (%s): %s", p.ImportPath, goos, p.Error.Err)
		}
		rel := func(paths []string) []string {
			out := make([]string, len(paths))
			for i, path := range paths {
				out[i] = relative(path)
			}
			return out
		}
		pkgs = append(pkgs, pkg{relative(p.ImportPath), rel(p.Imports), rel(p.TestImports), rel(p.XTestImports)})
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list (%s): %v\n%s", goos, err, stderr.String())
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list (%s) listed %d packages; expected the whole module", goos, len(pkgs))
	}
	return pkgs
}

// relative strips the module path from the module's own packages.
func relative(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func isOwn(path string) bool {
	return path == "." || strings.HasPrefix(path, "cmd/") || strings.HasPrefix(path, "internal/") || strings.HasPrefix(path, "hack/")
}

func isStd(path string) bool {
	return !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") && !isOwn(path)
}

// matches reports whether path is pattern: an exact path, "P/..." for P and below, "..." for
// all; for other modules' imports a pattern is also a prefix ("k8s.io/api" covers
// "k8s.io/api/core/v1").
func matches(path, pattern string, prefix bool) bool {
	if pattern == "..." {
		return true
	}
	base, below := strings.CutSuffix(pattern, "/...")
	return path == base || ((below || prefix) && strings.HasPrefix(path, base+"/"))
}

func matchesAny(path string, patterns []string, prefix bool) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(path, p, prefix) })
}

// check returns every broken rule, one line each.
func check(pkgs []pkg) []string {
	var errs []string
	for _, p := range pkgs {
		product := !matchesAny(p.ImportPath, harness, false)
		for _, imp := range p.Imports {
			if product && matchesAny(imp, harness, false) {
				errs = append(errs, fmt.Sprintf("%s imports %s: a product package imports no test harness", p.ImportPath, imp))
			}
		}
		all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		for _, n := range nobodyImports {
			for _, imp := range all {
				if !matches(imp, n.path, true) || matchesAny(p.ImportPath, n.except, false) ||
					(matchesAny(p.ImportPath, n.exceptTests, false) && !slices.Contains(p.Imports, imp)) {
					continue
				}
				errs = append(errs, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, n.doc))
			}
		}
		for _, r := range rules {
			if !matches(p.ImportPath, r.pkgs, false) {
				continue
			}
			for _, imp := range p.Imports {
				switch {
				case matchesAny(imp, r.never, true):
					errs = append(errs, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, r.doc))
				case isStd(imp):
				case isOwn(imp):
					if r.may != nil && !slices.Contains(r.may, imp) {
						errs = append(errs, fmt.Sprintf("%s imports %s, not among %v: %s", p.ImportPath, imp, r.may, r.doc))
					}
				case r.external != nil && !matchesAny(imp, r.external, true):
					errs = append(errs, fmt.Sprintf("%s imports %s, not among %v: %s", p.ImportPath, imp, r.external, r.doc))
				}
			}
		}
	}
	return errs
}

// TestImportRules checks the module against the rules, on every platform a binary is released for.
func TestImportRules(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			pkgs := list(t, goos)
			for _, e := range check(pkgs) {
				t.Error(e)
			}
			if goos == "linux" {
				checkRulesNamePackages(t, pkgs)
			}
		})
	}
}

// checkRulesNamePackages: every package a rule names exists, so that a renamed or removed package
// leaves no rule that silently checks nothing.
func checkRulesNamePackages(t *testing.T, pkgs []pkg) {
	t.Helper()
	exists := func(pattern string) bool {
		return slices.ContainsFunc(pkgs, func(p pkg) bool { return matches(p.ImportPath, pattern, false) })
	}
	var named []string
	named = append(named, harness...)
	for _, r := range rules {
		named = append(named, r.pkgs)
		named = append(named, r.may...)
		for _, n := range r.never {
			if isOwn(n) {
				named = append(named, n)
			}
		}
	}
	for _, n := range nobodyImports {
		named = append(named, n.except...)
		named = append(named, n.exceptTests...)
	}
	for _, n := range named {
		if !exists(n) {
			t.Errorf("a rule names %s, which is no package of the module", n)
		}
	}
}

// TestCheckFindsViolations: each kind of rule can fail.
func TestCheckFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    pkg
		want string // in the one error
	}{
		{"product imports a harness", pkg{ImportPath: "cmd/nodekeeper/app", Imports: []string{"internal/test/golden"}},
			"a product package imports no test harness"},
		{"lease imports client code", pkg{ImportPath: "internal/lease", Imports: []string{"k8s.io/client-go/kubernetes"}},
			"lease stays pure"},
		{"lease imports kube", pkg{ImportPath: "internal/lease", Imports: []string{"internal/kube"}},
			"lease stays pure"},
		{"kube imports another nodekeeper package", pkg{ImportPath: "internal/kube", Imports: []string{"internal/lease"}},
			"kube imports client-go"},
		{"render reaches into read", pkg{ImportPath: "internal/audit/render", Imports: []string{"internal/audit/read"}},
			"never read"},
		{"read imports outside the standard library", pkg{ImportPath: "internal/audit/read", Imports: []string{"sigs.k8s.io/yaml"}},
			"standard library only"},
		{"a test of lease imports cmd", pkg{ImportPath: "internal/lease", XTestImports: []string{"cmd/nodekeeper/app"}},
			"nothing outside cmd imports it"},
		{"gc's product code imports cmd", pkg{ImportPath: "internal/gc", Imports: []string{"cmd/nodekeeper/app"}},
			"nothing outside cmd imports it"},
		{"doctor imports cmd", pkg{ImportPath: "internal/doctor", Imports: []string{"cmd/nodekeeper/app"}},
			"nothing outside cmd imports it"},
		{"the controller imports another command", pkg{ImportPath: "internal/controller", Imports: []string{"internal/gc"}},
			"never cmd or another command's package"},
		{"the controller imports the AWS SDK", pkg{ImportPath: "internal/controller/command", Imports: []string{"github.com/aws/aws-sdk-go-v2/service/ec2"}},
			"client libraries"},
		{"a client-go pager", pkg{ImportPath: "internal/leasesview", Imports: []string{"k8s.io/client-go/tools/pager"}},
			"kube.Pages"},
		{"eni imports the SDK", pkg{ImportPath: "internal/eni", Imports: []string{"github.com/aws/aws-sdk-go-v2/aws"}},
			"eni imports no AWS SDK"},
		{"doctor imports bundle", pkg{ImportPath: "internal/doctor", Imports: []string{"internal/bundle"}},
			"doctor never imports bundle"},
		{"k8s.io/kubernetes in a test", pkg{ImportPath: "internal/test/integration", TestImports: []string{"k8s.io/kubernetes/pkg/api"}},
			"never enters the product's go.mod"},
	} {
		errs := check([]pkg{tc.p})
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%s: check = %q, want an error saying %q", tc.name, errs, tc.want)
		}
	}
	// What is allowed passes: gc's CLI test, cmd's main importing app, harness importing harness.
	for _, p := range []pkg{
		{ImportPath: "internal/gc", XTestImports: []string{"cmd/nodekeeper/app"}},
		{ImportPath: "cmd/nodekeeper", Imports: []string{"cmd/nodekeeper/app", "internal/cli", "k8s.io/klog/v2"}},
		{ImportPath: "internal/test/testenv", Imports: []string{"internal/controlplane", "internal/kubeletsim", "testing"}},
		{ImportPath: "internal/lease", Imports: []string{"k8s.io/api/coordination/v1", "time"}, TestImports: []string{"internal/test/golden"}},
	} {
		if errs := check([]pkg{p}); len(errs) != 0 {
			t.Errorf("%s: %q, want no error", p.ImportPath, errs)
		}
	}
}

// TestDocStatesTheRules: docs/architecture.md's "Import rules" names every package a rule is
// about, every harness and every import forbidden everywhere, so that the rules stated and the
// rules checked stay one list.
func TestDocStatesTheRules(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Import rules\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Import rules" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var named []string
	named = append(named, harness...)
	for _, n := range nobodyImports {
		named = append(named, n.path)
	}
	for _, r := range rules {
		if r.pkgs == "..." {
			named = append(named, r.never...)
			continue
		}
		named = append(named, strings.TrimSuffix(r.pkgs, "/..."))
	}
	for _, n := range named {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("the Import rules of docs/architecture.md do not name `%s`, which a rule is about", n)
		}
	}
}
