package awsserver

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// CloudWatch (metrics) speaks Smithy RPC v2 CBOR, as the SDK's cloudwatch client sends it
// (aws-sdk-go-v2/service/cloudwatch v1.75: rpcv2.NewCBOR in api_client.go): a POST to
// /service/GraniteServiceVersion20100801/operation/OPERATION with the header
// "Smithy-Protocol: rpc-v2-cbor" and a CBOR map of the input's members; the answer a CBOR map
// of the output's members with the same header, timestamps as tag 1 (epoch seconds), errors a
// map {"__type": CODE, "message": ...} with a 4xx/5xx status. CloudWatch carries the
// awsQueryCompatible trait: the client sends "X-Amzn-Query-Mode: true" and takes the error code
// from the "X-Amzn-Query-Error: CODE;Sender" header when present. Specification: Smithy's
// "RPC v2 CBOR protocol" page.

const cloudWatchService = "GraniteServiceVersion20100801"

type metricsService struct{}

func (metricsService) name() string { return CloudWatch }

// maxCBORBody bounds a request body: GetMetricData's 500 queries fit in far less.
const maxCBORBody = 4 << 20

var metricsOps = map[string]operation[cbor.Value]{
	"GetMetricData": op(decodeGetMetricData, (*awsfake.Cloud).GetMetricData, encodeGetMetricData),
}

func (metricsService) decode(r *http.Request) (decoded, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/service/"+cloudWatchService+"/operation/")
	if r.Method != http.MethodPost || !ok {
		return decoded{}, apiError("InvalidAction", "CloudWatch takes POST /service/%s/operation/NAME, not %s %s", cloudWatchService, r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/cbor" {
		return decoded{op: rest}, apiError("ValidationError", "Content-Type %q is not application/cbor", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCBORBody+1))
	if err != nil || len(body) > maxCBORBody {
		return decoded{op: rest}, apiError("ValidationError", "reading the request: too large or cut (%v)", err)
	}
	o, ok := metricsOps[rest]
	if !ok {
		return decoded{op: rest}, apiError("InvalidAction", "awsserver does not serve CloudWatch's %s", rest)
	}
	v, err := cbor.Decode(body)
	if err != nil {
		return decoded{op: rest}, apiError("SerializationException", "the body is not CBOR: %v", err)
	}
	return o.read(rest, v)
}

// cborReader turns CBOR values into the SDK's input members, remembering the first mismatch.
type cborReader struct{ err error }

func (c *cborReader) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

func (c *cborReader) mapOf(v cbor.Value, what string) cbor.Map {
	m, ok := v.(cbor.Map)
	if !ok && v != nil {
		c.fail("%s: want a map, got %T", what, v)
	}
	return m
}

// member converts the member key of m with as; an absent member is nil, a mismatch is
// remembered.
func member[T any](c *cborReader, m cbor.Map, key string, as func(cbor.Value) (T, error)) *T {
	v, ok := m[key]
	if !ok {
		return nil
	}
	out, err := as(v)
	if err != nil {
		c.fail("%s: %v", key, err)
		return nil
	}
	return &out
}

func asString(v cbor.Value) (string, error) {
	if s, ok := v.(cbor.String); ok {
		return string(s), nil
	}
	return "", fmt.Errorf("want a string, got %T", v)
}

func asList(v cbor.Value) (cbor.List, error) {
	if l, ok := v.(cbor.List); ok {
		return l, nil
	}
	return nil, fmt.Errorf("want a list, got %T", v)
}

func asUTC(v cbor.Value) (time.Time, error) {
	t, err := cbor.AsTime(v)
	return t.UTC(), err
}

func (c *cborReader) str(m cbor.Map, key string) *string     { return member(c, m, key, asString) }
func (c *cborReader) int32(m cbor.Map, key string) *int32    { return member(c, m, key, cbor.AsInt32) }
func (c *cborReader) time(m cbor.Map, key string) *time.Time { return member(c, m, key, asUTC) }

func (c *cborReader) list(m cbor.Map, key string) cbor.List {
	if l := member(c, m, key, asList); l != nil {
		return *l
	}
	return nil
}

func decodeGetMetricData(v cbor.Value) (*cloudwatch.GetMetricDataInput, error) {
	in, err := readGetMetricData(v)
	if err != nil {
		return nil, apiError("SerializationException", "GetMetricData: %v", err)
	}
	return in, nil
}

func readGetMetricData(v cbor.Value) (*cloudwatch.GetMetricDataInput, error) {
	var c cborReader
	m := c.mapOf(v, "input")
	in := &cloudwatch.GetMetricDataInput{StartTime: c.time(m, "StartTime"), EndTime: c.time(m, "EndTime"),
		NextToken: c.str(m, "NextToken"), MaxDatapoints: c.int32(m, "MaxDatapoints")}
	if s := c.str(m, "ScanBy"); s != nil {
		in.ScanBy = cwtypes.ScanBy(*s)
	}
	for i, qv := range c.list(m, "MetricDataQueries") {
		qm := c.mapOf(qv, fmt.Sprintf("MetricDataQueries[%d]", i))
		q := cwtypes.MetricDataQuery{Id: c.str(qm, "Id"), Expression: c.str(qm, "Expression"), Label: c.str(qm, "Label"), Period: c.int32(qm, "Period")}
		if rd, ok := qm["ReturnData"].(cbor.Bool); ok {
			b := bool(rd)
			q.ReturnData = &b
		}
		if sv, ok := qm["MetricStat"]; ok {
			sm := c.mapOf(sv, "MetricStat")
			st := &cwtypes.MetricStat{Period: c.int32(sm, "Period"), Stat: c.str(sm, "Stat")}
			if u := c.str(sm, "Unit"); u != nil {
				st.Unit = cwtypes.StandardUnit(*u)
			}
			if mv, ok := sm["Metric"]; ok {
				mm := c.mapOf(mv, "Metric")
				metric := &cwtypes.Metric{Namespace: c.str(mm, "Namespace"), MetricName: c.str(mm, "MetricName")}
				for _, dv := range c.list(mm, "Dimensions") {
					dm := c.mapOf(dv, "Dimension")
					metric.Dimensions = append(metric.Dimensions, cwtypes.Dimension{Name: c.str(dm, "Name"), Value: c.str(dm, "Value")})
				}
				st.Metric = metric
			}
			q.MetricStat = st
		}
		in.MetricDataQueries = append(in.MetricDataQueries, q)
	}
	return in, c.err
}

func cborTime(t time.Time) cbor.Value {
	return &cbor.Tag{ID: 1, Value: cbor.Float64(epochSeconds(t))}
}

func (metricsService) writeOutput(w http.ResponseWriter, reqID string, doc any) {
	writeCBOR(w, reqID, http.StatusOK, doc.(cbor.Value))
}

func encodeGetMetricData(_ string, o *cloudwatch.GetMetricDataOutput) any {
	results := cbor.List{}
	for _, r := range o.MetricDataResults {
		rm := cbor.Map{"StatusCode": cbor.String(r.StatusCode)}
		if r.Id != nil {
			rm["Id"] = cbor.String(*r.Id)
		}
		if r.Label != nil {
			rm["Label"] = cbor.String(*r.Label)
		}
		ts, vs := cbor.List{}, cbor.List{}
		for i, t := range r.Timestamps {
			ts = append(ts, cborTime(t))
			vs = append(vs, cbor.Float64(r.Values[i]))
		}
		rm["Timestamps"], rm["Values"] = ts, vs
		results = append(results, rm)
	}
	body := cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}
	if o.NextToken != nil {
		body["NextToken"] = cbor.String(*o.NextToken)
	}
	return body
}

// cloudWatchStatuses are the HTTP statuses CloudWatch answers error codes with (throttling:
// 400).
var cloudWatchStatuses = byStatus(map[int][]string{
	http.StatusForbidden:           {"AccessDenied", "AccessDeniedException", "MissingAuthenticationToken"},
	http.StatusInternalServerError: {"InternalFailure", "InternalServiceFault", "InternalError"},
	http.StatusServiceUnavailable:  {"ServiceUnavailable"},
})

func (metricsService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	status := cloudWatchStatuses.of(code)
	w.Header().Set("X-Amzn-Query-Error", code+";"+fault(status))
	writeCBOR(w, reqID, status, cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)})
}

func writeCBOR(w http.ResponseWriter, reqID string, status int, v cbor.Value) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.WriteHeader(status)
	w.Write(cbor.Encode(v))
}
