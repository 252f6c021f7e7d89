package read

import (
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
)

// BenchmarkConvertLine measures the hot path alone: parsing one generated event line into a
// record on one goroutine (no I/O, no merge, no analysis).
func BenchmarkConvertLine(b *testing.B) {
	var buf strings.Builder
	if _, err := auditgen.Generate(&buf, auditgen.Config{Nodes: 200, Duration: time.Minute, Seed: 1, ThrottledClient: true}); err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	data := make([][]byte, len(lines))
	var total int64
	for i, l := range lines {
		data[i] = []byte(l)
		total += int64(len(l) + 1)
	}
	c := &converter{li: newLocalInterner(newInterner())}
	var rec Record
	b.SetBytes(total / int64(len(lines)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, _, err := c.convert(data[i%len(data)], 0, &rec); res != convOK {
			b.Fatalf("line %d: %v %v", i%len(data), res, err)
		}
	}
}
