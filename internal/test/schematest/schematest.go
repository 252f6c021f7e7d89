// Package schematest checks nodekeeper's machine output against the JSON Schemas published in
// docs/schemas (one per kind: LeaseReport, LeaseChange, GCResult, DoctorReport, BundleReport, AuditReport,
// MaxPods, Version, Plan, PlanScenario, NodeStory). Each package's JSON output test calls Validate on what it printed, so a
// field added to an output struct without its schema, or a schema that no longer describes the
// output, fails that package's tests.
package schematest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// Dir is where the schemas live, relative to the module root.
const Dir = "docs/schemas"

// IDBase is the start of every schema's $id; the file name follows.
const IDBase = "https://nodekeeper.io/schemas/"

// Kinds lists every kind that has a schema; FileName gives its file.
func Kinds() []string {
	return []string{"LeaseReport", "LeaseChange", "GCResult", "DoctorReport", "BundleReport", "AuditReport", "MaxPods", "Version", "Plan", "PlanScenario", "NodeStory"}
}

// FileName is the schema file of kind, e.g. leasereport.schema.json.
func FileName(kind string) string { return strings.ToLower(kind) + ".schema.json" }

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// moduleRoot finds the directory holding go.mod, from the test's working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Schemas compiles every schema once.
func Schemas() (map[string]*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			compileErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		compiled = map[string]*jsonschema.Schema{}
		// Every schema is added under its $id first, so that one may refer to another
		// (LeaseChange's item is a LeaseReport item) without anything fetched from the network.
		for _, kind := range Kinds() {
			f, err := os.Open(filepath.Join(root, Dir, FileName(kind)))
			if err != nil {
				compileErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(f)
			f.Close()
			if err == nil {
				err = c.AddResource(IDBase+FileName(kind), doc)
			}
			if err != nil {
				compileErr = fmt.Errorf("schema of %s: %w", kind, err)
				return
			}
		}
		for _, kind := range Kinds() {
			s, err := c.Compile(IDBase + FileName(kind))
			if err != nil {
				compileErr = fmt.Errorf("schema of %s: %w", kind, err)
				return
			}
			compiled[kind] = s
		}
	})
	return compiled, compileErr
}

// Validate fails t unless doc (JSON, or YAML when it does not start with '{' or '[') is valid
// against the schema of its own kind, and that kind is want. A JSON array is validated item by
// item (maxpods prints one object per instance type).
func Validate(t testing.TB, want string, doc []byte) {
	t.Helper()
	if err := Check(want, doc); err != nil {
		t.Error(err)
	}
}

// Check is Validate returning the error instead.
func Check(want string, doc []byte) error {
	schemas, err := Schemas()
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) > 0 && trimmed[0] != '{' && trimmed[0] != '[' {
		if trimmed, err = yaml.YAMLToJSON(trimmed); err != nil {
			return fmt.Errorf("output is neither JSON nor YAML: %w", err)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return fmt.Errorf("output is not JSON: %w\n%.500s", err, trimmed)
	}
	docs := []any{v}
	if arr, ok := v.([]any); ok {
		docs = arr
	}
	for i, d := range docs {
		obj, _ := d.(map[string]any)
		kind, _ := obj["kind"].(string)
		if kind != want {
			return fmt.Errorf("document %d has kind %q, want %q", i, kind, want)
		}
		if err := schemas[kind].Validate(d); err != nil {
			return fmt.Errorf("%s does not match %s/%s: %v", kind, Dir, FileName(kind), err)
		}
	}
	return nil
}
