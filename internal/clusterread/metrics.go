package clusterread

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// maxAPIServerMetricsBytes bounds the API server's /metrics answer: a few MiB on a busy server
// (histograms per resource and verb); anything far beyond that is not read whole.
const maxAPIServerMetricsBytes = 64 << 20

// APIServerMetrics reads the API server's /metrics, keeping the series whose name starts with
// prefix (ParseMetrics). Every failure is a *Missing, since what needs the samples can go on
// without them: a forbidden or unauthenticated read names the non-resource URL it needs, a server
// without /metrics says so, and a transport failure or an answer that is not metrics quotes why.
func (r Reader) APIServerMetrics(ctx context.Context, prefix string) ([]Sample, error) {
	const resource = "apiserver"
	if r.REST == nil {
		return nil, &Missing{Resource: resource, Reason: "no client for /metrics"}
	}
	raw, err := ReadBounded(ctx, r.REST.Get().AbsPath("/metrics"), maxAPIServerMetricsBytes, "the API server's /metrics answer")
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return nil, &Missing{Resource: resource, Reason: "needs get on the non-resource URL /metrics", Err: err}
	case apierrors.IsNotFound(err):
		return nil, &Missing{Resource: resource, Reason: "the API server serves no /metrics", Err: err}
	case err != nil:
		return nil, &Missing{Resource: resource, Reason: "reading /metrics: " + textsafe.ClipRaw(err.Error(), 200), Err: err}
	}
	samples, err := ParseMetrics(raw, prefix)
	if err != nil {
		return nil, &Missing{Resource: resource, Reason: err.Error(), Err: err}
	}
	return samples, nil
}

// Sample is one series of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the Prometheus text exposition format with prometheus/common's parser,
// keeping only the series whose name starts with prefix; histograms and summaries come out as
// their _bucket, _sum and _count series. Lines of other metrics are dropped before parsing (an
// API server's /metrics holds thousands of series doctor never reads). A malformed line is an
// error (an API server does not produce one, so it means the answer is not metrics at all).
func ParseMetrics(data []byte, prefix string) ([]Sample, error) {
	var kept bytes.Buffer
	for line := range bytes.Lines(data) {
		name := bytes.TrimLeft(line, " \t")
		for _, c := range [][]byte{[]byte("# HELP "), []byte("# TYPE ")} {
			if bytes.HasPrefix(name, c) {
				name = name[len(c):]
			}
		}
		if bytes.HasPrefix(name, []byte(prefix)) {
			kept.Write(line)
			if !bytes.HasSuffix(line, []byte("\n")) {
				kept.WriteByte('\n')
			}
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&kept)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s*: %w", prefix, err)
	}
	var out []Sample
	for _, name := range slices.Sorted(maps.Keys(families)) {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, families[name])
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		for _, v := range vec {
			s := Sample{Labels: make(map[string]string, len(v.Metric)), Value: float64(v.Value)}
			for k, val := range v.Metric {
				if k == model.MetricNameLabel {
					s.Name = string(val)
					continue
				}
				s.Labels[string(k)] = string(val)
			}
			out = append(out, s)
		}
	}
	return out, nil
}
