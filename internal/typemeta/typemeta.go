// Package typemeta is the one apiVersion of nodekeeper's machine output and the one way to put
// apiVersion and kind in front of a document whose Go type does not carry them.
package typemeta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// APIVersion of every nodekeeper document (LeaseReport, GCResult, DoctorReport, BundleReport,
// AuditReport, MaxPods, Version; docs/schemas).
const APIVersion = "nodekeeper.io/v1alpha1"

// Marshal encodes v, which must encode as a JSON object, with "apiVersion" and "kind" as its first
// fields. v must not have a MarshalJSON method that calls Marshal on itself (pass a type without
// methods: `type fields T; typemeta.Marshal(kind, fields(t))`).
func Marshal(kind string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("typemeta: %s does not encode as a JSON object", kind)
	}
	head, err := json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}{APIVersion, kind})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(head) + len(body))
	b.Write(head[:len(head)-1]) // without its "}"
	if len(body) > 2 {
		b.WriteByte(',')
	}
	b.Write(body[1:])
	return b.Bytes(), nil
}
