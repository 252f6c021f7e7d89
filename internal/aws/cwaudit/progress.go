package cwaudit

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress writes what the source is doing to stderr: the plan, each window, a summary.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) printf(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

func (p *progress) window(w window, rows, i, n int, st Stats) {
	p.printf("cloudwatch: window %d/%d %s – %s: %d events (%s scanned so far)\n", i, n,
		time.UnixMilli(w.lo).UTC().Format(time.RFC3339), time.UnixMilli(w.hi).UTC().Format(time.RFC3339), rows, HumanBytes(st.BytesScanned))
}

func (p *progress) done(st Stats) {
	if st.UsedFallback {
		p.printf("cloudwatch: %d events read with FilterLogEvents in %d pages\n", st.Events, st.FilterPages)
		return
	}
	p.printf("cloudwatch: %d events in %d windows, %d queries (%d windows split at the %d-row limit); CloudWatch scanned %s (%.0f records)\n",
		st.Events, st.Windows, st.Queries, st.Splits, RowLimit, HumanBytes(st.BytesScanned), st.RecordsScanned)
}

// HumanBytes writes a byte count with a binary unit.
func HumanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
