package cwaudit_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// BenchmarkCloudWatchVsFile: `audit --cloudwatch` against the in-memory CloudWatch with 2
// million events over 24 hours (NODEKEEPER_AWS_BENCH_EVENTS to change), events per second
// through the same analysis, against reading the same selected events from a local file. The
// in-memory CloudWatch answers at once: the figure is nodekeeper's own cost (planning, windows,
// the merge), not AWS's latency. `make bench` entry "aws".
func BenchmarkCloudWatchVsFile(b *testing.B) {
	n := 2_000_000
	if s := os.Getenv("NODEKEEPER_AWS_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("NODEKEEPER_AWS_BENCH_EVENTS=%q: %v", s, err)
		}
	}
	c := newCloud()
	c.PollsBeforeComplete = 0
	c.MaxConcurrentQueries = 30
	day := 24 * time.Hour
	file := filepath.Join(b.TempDir(), "audit.log")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	evs := make([]awsfake.LogEvent, 0, n)
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * (day / time.Duration(n)))
		msg := leaseRenewal(i, at)
		evs = append(evs, awsfake.LogEvent{Stream: "kube-apiserver-audit-" + strconv.Itoa(i%3), Timestamp: at.UnixMilli(), Message: msg})
		w.WriteString(msg)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	c.AddLogEvents(group, evs...)
	evs = nil
	// The in-memory CloudWatch applies the filter in Go (JSON decoding): CloudWatch's servers'
	// work, not nodekeeper's. Let it remember every event's answer before the clock starts.
	warm, err := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(day), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	if err := warm.Plan(context.Background()); err != nil {
		b.Fatal(err)
	}

	run := func(b *testing.B, inputs func() []read.Input) {
		for i := 0; i < b.N; i++ {
			start := time.Now()
			rep, err := analyze.Analyze(inputs(), analyze.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Totals.Events != int64(n) {
				b.Fatalf("%d events analysed, want %d", rep.Totals.Events, n)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
		}
	}
	b.Run("file", func(b *testing.B) {
		run(b, func() []read.Input { return []read.Input{{Name: file}} })
	})
	b.Run("cloudwatch", func(b *testing.B) {
		var src *cwaudit.Source
		run(b, func() []read.Input {
			var err error
			src, err = cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(day), Parallel: 8, PollInterval: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			return []read.Input{src.Input(context.Background())}
		})
		st := src.Stats()
		b.ReportMetric(float64(st.Windows), "windows")
		b.ReportMetric(float64(st.Queries), "queries")
		fmt.Fprintf(os.Stderr, "cloudwatch: %d windows, %d queries, %d split, %s scanned\n", st.Windows, st.Queries, st.Splits, cwaudit.HumanBytes(st.BytesScanned))
	})
}
