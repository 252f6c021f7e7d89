package audit

import "github.com/nodekeeper/nodekeeper/internal/typemeta"

// ReportKind identifies the -o json|yaml document of `nodekeeper audit`
// (docs/schemas/auditreport.schema.json).
const ReportKind = "AuditReport"

// MarshalJSON writes the report with its apiVersion and kind first, so a script can tell it from
// nodekeeper's other documents; every other field is the struct's own.
func (r Report) MarshalJSON() ([]byte, error) {
	type fields Report // the same fields without this method
	return typemeta.Marshal(ReportKind, fields(r))
}
