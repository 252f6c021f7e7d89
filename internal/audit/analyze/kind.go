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
func (r Report) MarshalJSON() ([]byte, error) { return json.Marshal(r.Document()) }

// Document is the report as -o json writes it (what MarshalJSON marshals): apiVersion and kind,
// then the report's own fields. Encoding it rather than the Report spares encoding/json a pass:
// a Marshaler's output is validated and copied again before it is indented, about a third of
// the encoding of a large report.
func (r *Report) Document() any { return reportDocument{APIVersion, ReportKind, (*reportFields)(r)} }

// reportFields is Report without its MarshalJSON method.
type reportFields Report

type reportDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*reportFields
}
