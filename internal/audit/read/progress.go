package read

import (
	"io"
	"os"
	"sync/atomic"
)

// Progress is how far a Pipeline has got, for a progress line (nodekeeper audit --progress).
type Progress struct {
	// Bytes counts the bytes taken from the inputs as they are stored: compressed bytes for a
	// gzip file, so that it compares with the file's size. At the end it is the inputs' size.
	Bytes int64
	// Events counts the audit events handed to the analysis so far (in time order, duplicates
	// removed); the last report's equals Report.Totals.Events.
	Events int64
}

// ProgressFunc receives a Pipeline's progress on the merging goroutine: at most once per
// chunk parsed (1 MiB of lines, or up to 2048 export records), and once more at the end with
// the final counts. It must return quickly: the merge waits for it.
type ProgressFunc func(Progress)

// InputsSize is the sum of the inputs' sizes as stored (compressed for gzip), the total that
// Progress.Bytes reaches, or 0 when it is not known in advance: standard input, a stream
// (CloudWatch) or anything that is not a regular file.
func InputsSize(inputs []Input) int64 {
	var total int64
	for _, in := range inputs {
		if in.Open != nil || in.Name == "-" {
			return 0
		}
		st, err := os.Stat(in.Name)
		if err != nil || !st.Mode().IsRegular() {
			return 0
		}
		total += st.Size()
	}
	return total
}

// countedInput returns in with its reads counted into n: the bytes taken from the file (or
// stream) before any decompression. The readers of several inputs share n, hence the atomic.
func countedInput(in Input, n *atomic.Int64) Input {
	counted := in
	counted.Open = func() (io.ReadCloser, error) {
		rc, err := in.open()
		if err != nil {
			return nil, err
		}
		return &countingReadCloser{rc: rc, n: n}, nil
	}
	return counted
}

type countingReadCloser struct {
	rc io.ReadCloser
	n  *atomic.Int64
}

func (c *countingReadCloser) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReadCloser) Close() error { return c.rc.Close() }

// reportProgress gives the progress so far to the Options' callback, if any; on the merging
// goroutine only.
func (p *Pipeline) reportProgress() {
	if p.opts.Progress == nil {
		return
	}
	var events int64
	if p.ro != nil {
		events = p.ro.emitted
	}
	p.opts.Progress(Progress{Bytes: p.consumed.Load(), Events: events})
}
