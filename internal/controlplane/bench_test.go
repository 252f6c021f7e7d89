package controlplane

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStart measures a warm start of the control plane (binaries built, OS caches warm):
// from nothing to a ready API server, with and without kube-controller-manager.
//
//	go test ./internal/controlplane -run '^$' -bench Start -benchtime 3x
func BenchmarkStart(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"apiserver", Options{}},
		{"apiserver+kcm", Options{ControllerManager: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				start := time.Now()
				env, err := Start(context.Background(), tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				b.StopTimer()
				env.Stop()
				b.StartTimer()
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/start")
		})
	}
}
