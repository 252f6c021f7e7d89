package audit

import "github.com/nodekeeper/nodekeeper/internal/audit/analyze"

// ReportKind is the kind of the -o json|yaml document (docs/schemas/auditreport.schema.json).
const ReportKind = analyze.ReportKind
