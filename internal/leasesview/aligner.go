package leasesview

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The aligner: kubectl's table layout, with every cell escaped, from rows built once each.

// Column layout of kubectl's tables (k8s.io/cli-runtime/pkg/printers.GetNewTabWriter).
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// writeAligned writes n rows exactly as kubectl's tab writer lays them out — every column but the
// last padded to its widest cell plus three spaces, at least six. row(i) is called once per row:
// its cells, escaped by cleanCell (so a holder identity cannot reach the terminal raw or break the
// layout), are kept back to back in one buffer while the widths are measured, then written padded.
// The buffer is the size of the table's text, a fraction of the rows it is printed from; building
// every row twice instead, to measure and then to write, cost more time than the buffer costs
// memory at 100,000 rows.
func writeAligned(w io.Writer, n int, row func(i int) []string) error {
	var (
		widths []int
		text   []byte
		ends   []int // where each cell ends in text, row after row
		cells  = make([]int, n)
	)
	for i := 0; i < n; i++ {
		r := row(i)
		cells[i] = len(r)
		for c, cell := range r {
			cell = cleanCell(cell)
			if c < len(r)-1 {
				if c == len(widths) {
					widths = append(widths, tableMinWidth)
				}
				if cw := utf8.RuneCountInString(cell) + tablePadding; cw > widths[c] {
					widths[c] = cw
				}
			}
			text = append(text, cell...)
			ends = append(ends, len(text))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	start, k := 0, 0
	for i := 0; i < n; i++ {
		for c := 0; c < cells[i]; c++ {
			cell := text[start:ends[k]]
			bw.Write(cell)
			if c < cells[i]-1 {
				for pad := widths[c] - utf8.RuneCount(cell); pad > 0; pad-- {
					bw.WriteByte(' ')
				}
			}
			start = ends[k]
			k++
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
