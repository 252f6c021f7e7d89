package eni

import "encoding/json"

// APIVersion and Kind identify the -o json document of `nodekeeper maxpods`, one per instance
// type (docs/schemas/maxpods.schema.json).
const (
	APIVersion = "nodekeeper.io/v1alpha1"
	Kind       = "MaxPods"
)

// MarshalJSON writes the result with its apiVersion and kind first; every other field is the
// struct's own.
func (r Result) MarshalJSON() ([]byte, error) {
	type fields Result // the same fields without this method
	return json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		fields
	}{APIVersion, Kind, fields(r)})
}
