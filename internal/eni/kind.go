package eni

import "github.com/nodekeeper/nodekeeper/internal/typemeta"

// Kind identifies the -o json document of `nodekeeper maxpods`, one per instance type
// (docs/schemas/maxpods.schema.json).
const Kind = "MaxPods"

// MarshalJSON writes the result with its apiVersion and kind first; every other field is the
// struct's own.
func (r Result) MarshalJSON() ([]byte, error) {
	type fields Result // the same fields without this method
	return typemeta.Marshal(Kind, fields(r))
}
