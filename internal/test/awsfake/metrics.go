package awsfake

import (
	"context"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ nkaws.CloudWatchAPI = (*Cloud)(nil)

// MetricSample is one raw value of a CloudWatch metric (what PutMetricData would have sent).
type MetricSample struct {
	Time  time.Time
	Value float64
}

// metricKey names a metric the way CloudWatch does: namespace, name and the full set of
// dimensions (a metric with other dimensions is another metric).
func metricKey(namespace, name string, dims map[string]string) string {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(namespace + "\x00" + name)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + dims[k])
	}
	return b.String()
}

// AddMetricSamples stores samples of a metric (any order).
func (c *Cloud) AddMetricSamples(namespace, name string, dims map[string]string, samples ...MetricSample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metrics == nil {
		c.metrics = map[string][]MetricSample{}
	}
	k := metricKey(namespace, name, dims)
	c.metrics[k] = append(c.metrics[k], samples...)
}

// queryID is the form CloudWatch requires of a query's Id: "must start with a lowercase
// letter", then letters, digits and underscores (GetMetricData, MetricDataQuery.Id).
var queryID = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]{0,254}$`)

// statistics are the statistics a MetricStat may name that the fake computes.
var statistics = map[string]func(vs []float64) float64{
	"Average": func(vs []float64) float64 {
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s / float64(len(vs))
	},
	"Sum": func(vs []float64) float64 {
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s
	},
	"Minimum": func(vs []float64) float64 {
		m := math.Inf(1)
		for _, v := range vs {
			m = math.Min(m, v)
		}
		return m
	},
	"Maximum": func(vs []float64) float64 {
		m := math.Inf(-1)
		for _, v := range vs {
			m = math.Max(m, v)
		}
		return m
	},
	"SampleCount": func(vs []float64) float64 { return float64(len(vs)) },
}

// GetMetricData implements CloudWatchAPI for MetricStat queries: the samples in
// [StartTime, EndTime) are grouped by period (aligned to the period as CloudWatch aligns them)
// and reduced with the statistic; periods without samples have no datapoint. It validates what
// CloudWatch validates (ValidationError): 1 to 500 queries, IDs, unique IDs, a period of 1, 5,
// 10, 20, 30 or a multiple of 60 seconds, a known statistic, StartTime before EndTime. Math
// expressions are not modelled and answered with ValidationError. Results are paged by query
// (PageSize results a page); ScanBy orders each result's datapoints.
func (c *Cloud) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	return answer(c, nkaws.PermGetMetricData, in, c.getMetricData)
}

func (c *Cloud) getMetricData(in *cloudwatch.GetMetricDataInput) (*cloudwatch.GetMetricDataOutput, error) {
	qs := in.MetricDataQueries
	if len(qs) == 0 || len(qs) > nkaws.MaxMetricQueries {
		return nil, apiError("ValidationError", "MetricDataQueries must hold 1 to %d queries, got %d", nkaws.MaxMetricQueries, len(qs))
	}
	if in.StartTime == nil || in.EndTime == nil || !in.StartTime.Before(*in.EndTime) {
		return nil, apiError("ValidationError", "The parameter StartTime must be less than the parameter EndTime.")
	}
	seen := map[string]bool{}
	for _, q := range qs {
		id := str(q.Id)
		if !queryID.MatchString(id) {
			return nil, apiError("ValidationError", "The value %s for parameter MetricDataQueries.member.Id is not valid: it must start with a lowercase letter and hold letters, digits and underscores", id)
		}
		if seen[id] {
			return nil, apiError("ValidationError", "The values for parameter id in MetricDataQueries are not unique.")
		}
		seen[id] = true
		if q.Expression != nil || q.MetricStat == nil || q.MetricStat.Metric == nil {
			return nil, apiError("ValidationError", "awsfake answers MetricStat queries only (query %s)", id)
		}
		if _, ok := statistics[str(q.MetricStat.Stat)]; !ok {
			return nil, apiError("ValidationError", "awsfake does not compute the statistic %q (query %s)", str(q.MetricStat.Stat), id)
		}
		if p := q.MetricStat.Period; p == nil || !validPeriod(*p) {
			return nil, apiError("ValidationError", "The parameter MetricDataQueries.member.MetricStat.Period must be 1, 5, 10, 20, 30 or a multiple of 60 (query %s)", id)
		}
	}
	p, err := pageOf(qs, in.NextToken, c.pageSize(defaultPageSize, nil))
	if err != nil {
		return nil, apiError("InvalidNextToken", "The service couldn't process your request because the NextToken is invalid.")
	}
	out := &cloudwatch.GetMetricDataOutput{NextToken: p.next}
	for _, q := range p.items {
		out.MetricDataResults = append(out.MetricDataResults, c.metricResult(q, *in.StartTime, *in.EndTime, in.ScanBy))
	}
	return out, nil
}

func validPeriod(p int32) bool {
	switch p {
	case 1, 5, 10, 20, 30:
		return true
	}
	return p > 0 && p%60 == 0
}

// metricResult answers one query. c.mu is held.
func (c *Cloud) metricResult(q cwtypes.MetricDataQuery, start, end time.Time, scan cwtypes.ScanBy) cwtypes.MetricDataResult {
	m := q.MetricStat.Metric
	dims := map[string]string{}
	for _, d := range m.Dimensions {
		dims[str(d.Name)] = str(d.Value)
	}
	period := time.Duration(*q.MetricStat.Period) * time.Second
	buckets := map[time.Time][]float64{}
	for _, s := range c.metrics[metricKey(str(m.Namespace), str(m.MetricName), dims)] {
		if s.Time.Before(start) || !s.Time.Before(end) {
			continue
		}
		b := s.Time.UTC().Truncate(period)
		buckets[b] = append(buckets[b], s.Value)
	}
	times := make([]time.Time, 0, len(buckets))
	for t := range buckets {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool {
		if scan == cwtypes.ScanByTimestampAscending {
			return times[i].Before(times[j])
		}
		return times[i].After(times[j]) // TimestampDescending is CloudWatch's default
	})
	label := str(q.Label)
	if label == "" {
		label = str(m.MetricName)
	}
	r := cwtypes.MetricDataResult{Id: q.Id, Label: &label, StatusCode: cwtypes.StatusCodeComplete, Timestamps: times, Values: make([]float64, 0, len(times))}
	stat := statistics[*q.MetricStat.Stat]
	for _, t := range times {
		r.Values = append(r.Values, stat(buckets[t]))
	}
	return r
}
