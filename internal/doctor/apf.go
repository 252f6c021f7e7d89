package doctor

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

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

const rejectedMetric = "apiserver_flowcontrol_rejected_requests_total"

// CheckAPF reports the requests APF rejected, per priority level, from the API server's metrics.
// It returns the number of priority levels seen (the section's checked count).
func CheckAPF(samples []Sample) ([]findings.Finding, int) {
	levels := map[string]bool{}
	type agg struct {
		total   float64
		reasons map[string]float64
		flows   map[string]float64
	}
	rejected := map[string]*agg{}
	for _, s := range samples {
		pl := s.Labels["priority_level"]
		if pl == "" {
			continue
		}
		levels[pl] = true
		if s.Name != rejectedMetric || s.Value <= 0 {
			continue
		}
		a := rejected[pl]
		if a == nil {
			a = &agg{reasons: map[string]float64{}, flows: map[string]float64{}}
			rejected[pl] = a
		}
		a.total += s.Value
		a.reasons[s.Labels["reason"]] += s.Value
		a.flows[s.Labels["flow_schema"]] += s.Value
	}
	var out []findings.Finding
	for _, pl := range slices.Sorted(maps.Keys(rejected)) {
		a := rejected[pl]
		out = append(out, RuleAPFRejected.New("prioritylevelconfiguration/"+pl,
			"%.0f requests rejected since the API server started (%s) from flow schemas %s",
			a.total, topCounts(a.reasons, 0), topCounts(a.flows, 5)))
	}
	return out, len(levels)
}

// topCounts formats "a 10, b 3" sorted by count, at most limit entries (0 = all).
func topCounts(m map[string]float64, limit int) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range m {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].v != list[j].v {
			return list[i].v > list[j].v
		}
		return list[i].k < list[j].k
	})
	var parts []string
	for i, e := range list {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-limit))
			break
		}
		k := e.k
		if k == "" {
			k = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", k, e.v))
	}
	return strings.Join(parts, ", ")
}
