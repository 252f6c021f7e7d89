package awsfake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var m0 = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

func ebsQuery(id, volume, metric, stat string, period int32) cwtypes.MetricDataQuery {
	return cwtypes.MetricDataQuery{Id: aws.String(id), MetricStat: &cwtypes.MetricStat{Period: aws.Int32(period), Stat: aws.String(stat),
		Metric: &cwtypes.Metric{Namespace: aws.String("AWS/EBS"), MetricName: aws.String(metric),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("VolumeId"), Value: aws.String(volume)}}}}}
}

// TestGetMetricDataStatistics: samples are grouped by period and reduced by the statistic, in
// [StartTime, EndTime), ordered as ScanBy asks; a metric with other dimensions is another metric.
func TestGetMetricDataStatistics(t *testing.T) {
	c := New()
	for i, v := range []float64{4, 8, 1, 7} { // two samples in each of the minutes 0 and 1
		c.AddMetricSamples("AWS/EBS", "VolumeQueueLength", map[string]string{"VolumeId": "vol-1"}, MetricSample{Time: m0.Add(time.Duration(i) * 30 * time.Second), Value: v})
	}
	c.AddMetricSamples("AWS/EBS", "VolumeQueueLength", map[string]string{"VolumeId": "vol-2"}, MetricSample{Time: m0, Value: 99})
	c.AddMetricSamples("AWS/EBS", "VolumeQueueLength", map[string]string{"VolumeId": "vol-1"}, MetricSample{Time: m0.Add(5 * time.Minute), Value: 50}) // past EndTime
	for _, tc := range []struct {
		stat string
		scan cwtypes.ScanBy
		want []string
	}{
		{"Average", cwtypes.ScanByTimestampAscending, []string{"06:00=6", "06:01=4"}},
		{"Sum", cwtypes.ScanByTimestampAscending, []string{"06:00=12", "06:01=8"}},
		{"Minimum", cwtypes.ScanByTimestampAscending, []string{"06:00=4", "06:01=1"}},
		{"Maximum", "", []string{"06:01=7", "06:00=8"}}, // TimestampDescending by default
		{"SampleCount", cwtypes.ScanByTimestampAscending, []string{"06:00=2", "06:01=2"}},
	} {
		t.Run(tc.stat, func(t *testing.T) {
			out, err := c.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{StartTime: aws.Time(m0), EndTime: aws.Time(m0.Add(5 * time.Minute)),
				ScanBy: tc.scan, MetricDataQueries: []cwtypes.MetricDataQuery{ebsQuery("q", "vol-1", "VolumeQueueLength", tc.stat, 60)}})
			if err != nil {
				t.Fatal(err)
			}
			r := out.MetricDataResults[0]
			var got []string
			for i, ts := range r.Timestamps {
				got = append(got, fmt.Sprintf("%s=%g", ts.Format("15:04"), r.Values[i]))
			}
			if !slices.Equal(got, tc.want) || r.StatusCode != cwtypes.StatusCodeComplete || aws.ToString(r.Label) != "VolumeQueueLength" {
				t.Errorf("got %v %s %q, want %v", got, r.StatusCode, aws.ToString(r.Label), tc.want)
			}
		})
	}
}

// TestGetMetricDataRefuses: what CloudWatch answers with ValidationError, and Deny.
func TestGetMetricDataRefuses(t *testing.T) {
	ok := ebsQuery("q", "vol-1", "VolumeReadOps", "Sum", 60)
	many := make([]cwtypes.MetricDataQuery, 501)
	for i := range many {
		many[i] = ebsQuery(fmt.Sprintf("q%d", i), "vol-1", "VolumeReadOps", "Sum", 60)
	}
	expr := cwtypes.MetricDataQuery{Id: aws.String("e"), Expression: aws.String("SUM(METRICS())")}
	for _, tc := range []struct {
		name    string
		queries []cwtypes.MetricDataQuery
		end     time.Time
		deny    bool
		code    string
	}{
		{"no queries", nil, m0.Add(time.Hour), false, "ValidationError"},
		{"over 500 queries", many, m0.Add(time.Hour), false, "ValidationError"},
		{"end before start", []cwtypes.MetricDataQuery{ok}, m0, false, "ValidationError"},
		{"ID with a capital first", []cwtypes.MetricDataQuery{ebsQuery("Q", "vol-1", "VolumeReadOps", "Sum", 60)}, m0.Add(time.Hour), false, "ValidationError"},
		{"ID with a dash", []cwtypes.MetricDataQuery{ebsQuery("q-1", "vol-1", "VolumeReadOps", "Sum", 60)}, m0.Add(time.Hour), false, "ValidationError"},
		{"IDs not unique", []cwtypes.MetricDataQuery{ok, ok}, m0.Add(time.Hour), false, "ValidationError"},
		{"period of 90s", []cwtypes.MetricDataQuery{ebsQuery("q", "vol-1", "VolumeReadOps", "Sum", 90)}, m0.Add(time.Hour), false, "ValidationError"},
		{"unknown statistic", []cwtypes.MetricDataQuery{ebsQuery("q", "vol-1", "VolumeReadOps", "Median", 60)}, m0.Add(time.Hour), false, "ValidationError"},
		{"expression", []cwtypes.MetricDataQuery{expr}, m0.Add(time.Hour), false, "ValidationError"},
		{"denied", []cwtypes.MetricDataQuery{ok}, m0.Add(time.Hour), true, "AccessDeniedException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.Deny[nkaws.PermGetMetricData] = tc.deny
			_, err := c.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{StartTime: aws.Time(m0), EndTime: aws.Time(tc.end), MetricDataQueries: tc.queries})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tc.code {
				t.Errorf("error %v, want %s", err, tc.code)
			}
		})
	}
}

// TestGetMetricDataPages: results come in pages of PageSize queries, and the helper merges
// them by query ID.
func TestGetMetricDataPages(t *testing.T) {
	c := New()
	c.PageSize = 2
	var qs []cwtypes.MetricDataQuery
	for i := range 5 {
		vol := fmt.Sprintf("vol-%d", i)
		c.AddMetricSamples("AWS/EBS", "VolumeReadOps", map[string]string{"VolumeId": vol}, MetricSample{Time: m0, Value: float64(i)})
		qs = append(qs, ebsQuery(fmt.Sprintf("v%d", i), vol, "VolumeReadOps", "Sum", 60))
	}
	series, err := nkaws.GetMetricData(context.Background(), c, qs, m0, m0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Calls(nkaws.PermGetMetricData); n != 3 {
		t.Errorf("%d requests, want 3 pages", n)
	}
	for i := range 5 {
		if s := series[fmt.Sprintf("v%d", i)]; s == nil || s.Points[m0] != float64(i) {
			t.Errorf("v%d: %+v", i, s)
		}
	}
}

// TestDescribeVolumesFilters: the volume filters, and an unknown VolumeIds entry failing the call.
func TestDescribeVolumesFilters(t *testing.T) {
	c := New()
	c.Volumes = []ec2types.Volume{
		{VolumeId: aws.String("vol-1"), VolumeType: ec2types.VolumeTypeGp2, State: ec2types.VolumeStateInUse,
			Attachments: []ec2types.VolumeAttachment{{InstanceId: aws.String("i-1")}}},
		{VolumeId: aws.String("vol-2"), VolumeType: ec2types.VolumeTypeGp3, State: ec2types.VolumeStateAvailable},
	}
	ids := func(in *ec2.DescribeVolumesInput) ([]string, error) {
		out, err := c.DescribeVolumes(context.Background(), in)
		if err != nil {
			return nil, err
		}
		var got []string
		for _, v := range out.Volumes {
			got = append(got, *v.VolumeId)
		}
		return got, nil
	}
	for _, tc := range []struct {
		name string
		in   *ec2.DescribeVolumesInput
		want []string
	}{
		{"volume-id filter skips unknown IDs", &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{filter("volume-id", "vol-2", "vol-9")}}, []string{"vol-2"}},
		{"attached to an instance", &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{filter("attachment.instance-id", "i-1")}}, []string{"vol-1"}},
		{"by type and status", &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{filter("volume-type", "gp*"), filter("status", "available")}}, []string{"vol-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ids(tc.in)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	var api smithy.APIError
	if _, err := ids(&ec2.DescribeVolumesInput{VolumeIds: []string{"vol-1", "vol-9"}}); !errors.As(err, &api) || api.ErrorCode() != "InvalidVolume.NotFound" {
		t.Errorf("unknown VolumeIds entry: %v", err)
	}
}
