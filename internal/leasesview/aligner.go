package leasesview

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The aligner: kubectl's table layout, computed in two passes instead of buffering a whole
// table of 100,000 rows, with every cell escaped.

// Column layout of kubectl's tables (k8s.io/cli-runtime/pkg/printers.GetNewTabWriter).
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// writeAligned writes n rows exactly as kubectl's tab writer lays them out — every column but the
// last padded to its widest cell plus three spaces, at least six — but computes the widths in a
// first pass over the rows instead of buffering the whole table: row(i) is called twice per row.
// Every cell goes through cleanCell, so a holder identity cannot reach the terminal raw or break
// the layout.
func writeAligned(w io.Writer, n int, row func(i int) []string) error {
	var widths []int
	for i := 0; i < n; i++ {
		cells := row(i)
		for c := 0; c < len(cells)-1; c++ {
			if c == len(widths) {
				widths = append(widths, tableMinWidth)
			}
			if cw := utf8.RuneCountInString(cleanCell(cells[c])) + tablePadding; cw > widths[c] {
				widths[c] = cw
			}
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := 0; i < n; i++ {
		cells := row(i)
		for c, cell := range cells {
			cell = cleanCell(cell)
			bw.WriteString(cell)
			if c < len(cells)-1 {
				for pad := widths[c] - utf8.RuneCountInString(cell); pad > 0; pad-- {
					bw.WriteByte(' ')
				}
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// cleanCell makes a cell safe for the terminal and for the layout: every field of a Lease or Node
// is written by somebody else (a tenant can put ESC]0;…BEL or ESC[2J into a holderIdentity), so
// control characters, C1 controls, bidirectional overrides and invalid UTF-8 are shown as visible
// escapes, which also keeps a tab or newline from shifting columns or starting a row.
func cleanCell(s string) string { return textsafe.Escape(s) }

func writeRow(w io.Writer, withNS bool, ns string, cells []string) {
	if withNS {
		fmt.Fprint(w, ns, "\t")
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}
