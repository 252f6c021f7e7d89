package schematest

import (
	"strings"
	"testing"
)

// TestSchemasCompile: every kind has a schema that compiles and refuses a document of another
// kind or without its required fields.
func TestSchemasCompile(t *testing.T) {
	schemas, err := Schemas()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range Kinds() {
		if schemas[kind] == nil {
			t.Errorf("%s: no schema", kind)
		}
		doc := `{"apiVersion":"nodekeeper.io/v1alpha1","kind":"` + kind + `"}`
		if err := Check(kind, []byte(doc)); err == nil || !strings.Contains(err.Error(), "does not match") {
			t.Errorf("%s: a document with only apiVersion and kind passed: %v", kind, err)
		}
		if err := Check(kind, []byte(`{"apiVersion":"nodekeeper.io/v1alpha1","kind":"Other"}`)); err == nil {
			t.Errorf("%s: a document of another kind passed", kind)
		}
	}
}
