// Package promscrape reads a Prometheus /metrics endpoint in tests with Prometheus's own text
// parser (expfmt), so that what the tests check is what a Prometheus server would ingest: a
// malformed exposition is an error, not a line quietly skipped. Import it from tests only.
package promscrape

import (
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape at one moment, as Prometheus stores it: a histogram is its
// name_bucket (one per le, +Inf included), name_sum and name_count series; a summary its
// quantiles, name_sum and name_count.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Series is the sample's series as the exposition writes it: name{a="x",b="y"}, labels sorted.
func (s Sample) Series() string {
	if len(s.Labels) == 0 {
		return s.Name
	}
	names := make([]string, 0, len(s.Labels))
	for n := range s.Labels {
		names = append(names, n)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, n := range names {
		pairs[i] = n + "=" + strconv.Quote(s.Labels[n])
	}
	return s.Name + "{" + strings.Join(pairs, ",") + "}"
}

// Get scrapes url (http://host:port/metrics); a status other than 200 is an error.
func Get(url string) ([]Sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// maxBody bounds what Fetch reads of an answer: far more than any test's exposition.
const maxBody = 16 << 20

// Fetch GETs url through client with the bearer token (none when empty), as Prometheus scrapes a
// protected endpoint, and answers the status and the body (bounded). A request that gets no
// answer gives status 0 and the error as the body, so that a test polling for a status can say
// what it saw last.
func Fetch(client *http.Client, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, string(body)
}

// InsecureTLSClient scrapes as a ServiceMonitor with tlsConfig.insecureSkipVerify does an
// endpoint with a self-signed serving certificate (the controller's --metrics-secure): HTTPS
// without verifying the certificate, each request bounded by a minute.
func InsecureTLSClient() *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// Parse reads the Prometheus text exposition format.
func Parse(r io.Reader) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics exposition: %w", err)
	}
	var list []*dto.MetricFamily
	for _, mf := range families {
		list = append(list, mf)
	}
	return flatten(list), nil
}

// Gather returns what a registry would serve, without HTTP in between.
func Gather(g prometheus.Gatherer) ([]Sample, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	return flatten(families), nil
}

// flatten turns metric families into their series, sorted.
func flatten(families []*dto.MetricFamily) []Sample {
	var out []Sample
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			out = append(out, samples(mf.GetName(), m)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Series() < out[j].Series() })
	return out
}

// samples flattens one metric of family name into its series.
func samples(name string, m *dto.Metric) []Sample {
	labels := map[string]string{}
	for _, lp := range m.GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	with := func(suffix string, value float64, extra ...string) Sample {
		l := make(map[string]string, len(labels)+1)
		for k, v := range labels {
			l[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return Sample{Name: name + suffix, Labels: l, Value: value}
	}
	switch {
	case m.Histogram != nil:
		h := m.GetHistogram()
		var out []Sample
		sawInf := false
		for _, b := range h.GetBucket() {
			sawInf = sawInf || math.IsInf(b.GetUpperBound(), 1)
			out = append(out, with("_bucket", float64(b.GetCumulativeCount())+b.GetCumulativeCountFloat(), "le", formatFloat(b.GetUpperBound())))
		}
		count := float64(h.GetSampleCount()) + h.GetSampleCountFloat()
		if !sawInf {
			out = append(out, with("_bucket", count, "le", "+Inf"))
		}
		return append(out, with("_sum", h.GetSampleSum()), with("_count", count))
	case m.Summary != nil:
		s := m.GetSummary()
		var out []Sample
		for _, q := range s.GetQuantile() {
			out = append(out, with("", q.GetValue(), "quantile", formatFloat(q.GetQuantile())))
		}
		return append(out, with("_sum", s.GetSampleSum()), with("_count", float64(s.GetSampleCount())))
	case m.Counter != nil:
		return []Sample{with("", m.GetCounter().GetValue())}
	case m.Gauge != nil:
		return []Sample{with("", m.GetGauge().GetValue())}
	default:
		return []Sample{with("", m.GetUntyped().GetValue())}
	}
}

func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Sum adds the values of the samples named name whose labels include every name/value pair of
// labelPairs ("result", "deleted"); 0 when none matches.
func Sum(samples []Sample, name string, labelPairs ...string) float64 {
	var sum float64
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(labelPairs); i += 2 {
			match = match && s.Labels[labelPairs[i]] == labelPairs[i+1]
		}
		if match {
			sum += s.Value
		}
	}
	return sum
}
