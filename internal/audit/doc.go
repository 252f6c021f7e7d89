// Package audit holds the end-to-end tests and benchmarks of `nodekeeper audit`; the work is done
// by three subpackages, one job each, which callers import directly and which import one another
// only downwards:
//
//   - read: inputs and their layouts, decompression, bounded records, the JSON scanner and the
//     parallel pipeline that yields compact records in stageTimestamp order. Imports only the
//     standard library.
//   - analyze: per-node, per-lease and per-talker state with memory bounds, and the Report.
//     Imports read.
//   - render: the text and HTML forms of a Report. Imports analyze and textsafe, not read: the
//     names it prints come from the report.
//
// gen generates audit logs for these tests and the benchmarks.
package audit
