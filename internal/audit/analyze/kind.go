package analyze

import "encoding/json"

// APIVersion and ReportKind identify the -o json|yaml document of `nodekeeper audit`
// (docs/schemas/auditreport.schema.json). APIVersion is nodekeeper's one document version
// (internal/typemeta, which this layer may not import; a test in package audit keeps them equal).
const (
	APIVersion = "nodekeeper.io/v1alpha1"
	ReportKind = "AuditReport"
)

// MarshalJSON writes the report with its apiVersion and kind first, so a script can tell it from
// nodekeeper's other documents; every other field is the struct's own.
func (r Report) MarshalJSON() ([]byte, error) {
	type fields Report // the same fields without this method
	return json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		fields
	}{APIVersion, ReportKind, fields(r)})
}
