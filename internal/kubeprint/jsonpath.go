package kubeprint

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

type reflectValue = reflect.Value

var relaxedPath = regexp.MustCompile(`^(\.?[^{}]+)$`)

// relaxed turns kubectl's relaxed forms (".metadata.name", "metadata.name", "{.metadata.name}")
// into a JSONPath template, as kubectl's --sort-by and custom-columns accept them.
func relaxed(expr string) (string, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "{") || strings.HasSuffix(expr, "}") {
		if !strings.HasPrefix(expr, "{") || !strings.HasSuffix(expr, "}") {
			return "", fmt.Errorf("unbalanced braces; write '{.metadata.name}' or '.metadata.name'")
		}
		return expr, nil
	}
	m := relaxedPath.FindStringSubmatch(expr)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	p := m[1]
	if !strings.HasPrefix(p, ".") {
		p = "." + p
	}
	return "{" + p + "}", nil
}

func parseJSONPath(what, expr string) (*jsonpath.JSONPath, error) {
	t, err := relaxed(expr)
	if err == nil {
		jp := jsonpath.New(what)
		if err = jp.Parse(t); err == nil {
			return jp, nil
		}
	}
	return nil, fmt.Errorf("%s %q: %w", what, expr, err)
}

// toJSONValue is obj as the generic JSON value a JSONPath walks (what kubectl's printers see:
// the object's JSON encoding, not its Go struct).
func toJSONValue(obj runtime.Object) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// JSONValue is obj as the generic JSON value kubectl's printers and --sort-by walk.
func JSONValue(obj runtime.Object) (any, error) { return toJSONValue(obj) }
