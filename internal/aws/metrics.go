package aws

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CloudWatchAPI is the part of CloudWatch (metrics) nodekeeper reads. *cloudwatch.Client
// satisfies it.
type CloudWatchAPI interface {
	GetMetricData(context.Context, *cloudwatch.GetMetricDataInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// MaxMetricQueries is the most queries one GetMetricData request may hold (CloudWatch API
// reference, GetMetricData: "MetricDataQueries ... maximum of 500").
const MaxMetricQueries = 500

// Series is one query's answer: datapoints by time, merged from every page.
type Series struct {
	Points map[time.Time]float64
	// Partial: CloudWatch said it did not return every datapoint: InternalError on any page,
	// or PartialData on the last one (earlier pages say PartialData when more pages follow).
	Partial bool

	failed bool // InternalError on a page read so far
}

// GetMetricData runs the queries (in requests of at most MaxMetricQueries), follows every page
// and returns each query's datapoints by query ID.
func GetMetricData(ctx context.Context, api CloudWatchAPI, queries []cwtypes.MetricDataQuery, start, end time.Time) (map[string]*Series, error) {
	out := map[string]*Series{}
	for len(queries) > 0 {
		batch := queries[:min(len(queries), MaxMetricQueries)]
		queries = queries[len(batch):]
		p := cloudwatch.NewGetMetricDataPaginator(api, &cloudwatch.GetMetricDataInput{
			MetricDataQueries: batch, StartTime: &start, EndTime: &end, ScanBy: cwtypes.ScanByTimestampAscending,
		})
		for pages := 0; p.HasMorePages(); pages++ {
			if pages == MaxPages {
				return nil, &PagesError{Permission: PermGetMetricData, Pages: pages}
			}
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, Explain(PermGetMetricData, err)
			}
			for _, r := range page.MetricDataResults {
				id := deref(r.Id)
				s := out[id]
				if s == nil {
					s = &Series{Points: map[time.Time]float64{}}
					out[id] = s
				}
				if len(r.Timestamps) != len(r.Values) {
					return nil, fmt.Errorf("%s: query %s answered %d timestamps for %d values", PermGetMetricData, id, len(r.Timestamps), len(r.Values))
				}
				for i, ts := range r.Timestamps {
					s.Points[ts.UTC()] = r.Values[i]
				}
				s.failed = s.failed || r.StatusCode == cwtypes.StatusCodeInternalError
				s.Partial = s.failed || r.StatusCode == cwtypes.StatusCodePartialData
			}
		}
	}
	return out, nil
}

// DescribeVolumes returns the EBS volumes matching in, from every page.
func DescribeVolumes(ctx context.Context, api EC2API, in *ec2.DescribeVolumesInput) ([]ec2types.Volume, error) {
	return allEC2Pages(ctx, PermDescribeVolumes, ec2.NewDescribeVolumesPaginator(api, in), func(page *ec2.DescribeVolumesOutput) []ec2types.Volume {
		return page.Volumes
	})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
