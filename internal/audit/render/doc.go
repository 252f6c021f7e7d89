// Package render writes an analyze.Report for people: the text report and the self-contained
// HTML page (JSON and YAML are the Report's own encodings).
//
// It may import analyze (the report and the names it shares, such as the string shown for
// names past the string table), textsafe, kubectl's table layout (cli-runtime's printers and the
// tab writer it returns) and the standard library, never read: it reads no input and computes
// nothing the report does not hold.
package render
