package awsserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// CloudWatch Logs' JSON 1.1: POST / with X-Amz-Target: Logs_20140328.OPERATION and
// Content-Type application/x-amz-json-1.1, the input and output JSON objects whose keys are
// the API reference's (lower camel case) member names, errors as {"__type": CODE, "message":
// ...} with HTTP 400.

const logsTargetPrefix = "Logs_20140328."

type logsService struct{}

func (logsService) name() string { return Logs }

// The request documents of the operations served. Unknown keys are refused (see decode).

type startQueryRequest struct {
	LogGroupName  *string  `json:"logGroupName"`
	LogGroupNames []string `json:"logGroupNames"`
	StartTime     *int64   `json:"startTime"`
	EndTime       *int64   `json:"endTime"`
	QueryString   *string  `json:"queryString"`
	Limit         *int32   `json:"limit"`
}

type queryIDRequest struct {
	QueryID *string `json:"queryId"`
}

type filterLogEventsRequest struct {
	LogGroupName        *string  `json:"logGroupName"`
	LogStreamNames      []string `json:"logStreamNames"`
	LogStreamNamePrefix *string  `json:"logStreamNamePrefix"`
	StartTime           *int64   `json:"startTime"`
	EndTime             *int64   `json:"endTime"`
	FilterPattern       *string  `json:"filterPattern"`
	NextToken           *string  `json:"nextToken"`
	Limit               *int32   `json:"limit"`
	Interleaved         *bool    `json:"interleaved"`
}

// jsonRequest is a JSON 1.1 request: the operation and its body.
type jsonRequest struct {
	op   string
	body []byte
}

// strictly reads a request document Doc, refusing members it does not know, and makes the SDK
// input of it.
func strictly[Doc, In any](input func(Doc) *In) func(jsonRequest) (*In, error) {
	return func(r jsonRequest) (*In, error) {
		var doc Doc
		d := json.NewDecoder(bytes.NewReader(r.body))
		d.DisallowUnknownFields()
		if err := d.Decode(&doc); err != nil {
			return nil, apiError("SerializationException", "%s: %v", r.op, err)
		}
		return input(doc), nil
	}
}

var logsOps = map[string]operation[jsonRequest]{
	"StartQuery": op(strictly(func(q startQueryRequest) *cloudwatchlogs.StartQueryInput {
		return &cloudwatchlogs.StartQueryInput{LogGroupName: q.LogGroupName, LogGroupNames: q.LogGroupNames,
			StartTime: q.StartTime, EndTime: q.EndTime, QueryString: q.QueryString, Limit: q.Limit}
	}), (*awsfake.Cloud).StartQuery, func(_ string, out *cloudwatchlogs.StartQueryOutput) any {
		return startQueryResponse{QueryID: out.QueryId}
	}),
	"GetQueryResults": op(strictly(func(q queryIDRequest) *cloudwatchlogs.GetQueryResultsInput {
		return &cloudwatchlogs.GetQueryResultsInput{QueryId: q.QueryID}
	}), (*awsfake.Cloud).GetQueryResults, encodeQueryResults),
	"StopQuery": op(strictly(func(q queryIDRequest) *cloudwatchlogs.StopQueryInput {
		return &cloudwatchlogs.StopQueryInput{QueryId: q.QueryID}
	}), (*awsfake.Cloud).StopQuery, func(_ string, out *cloudwatchlogs.StopQueryOutput) any {
		return stopQueryResponse{out.Success}
	}),
	"FilterLogEvents": op(strictly(func(q filterLogEventsRequest) *cloudwatchlogs.FilterLogEventsInput {
		return &cloudwatchlogs.FilterLogEventsInput{LogGroupName: q.LogGroupName, LogStreamNames: q.LogStreamNames,
			LogStreamNamePrefix: q.LogStreamNamePrefix, StartTime: q.StartTime, EndTime: q.EndTime,
			FilterPattern: q.FilterPattern, NextToken: q.NextToken, Limit: q.Limit, Interleaved: q.Interleaved}
	}), (*awsfake.Cloud).FilterLogEvents, encodeFilterLogEvents),
}

func (logsService) decode(r *http.Request) (decoded, error) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, logsTargetPrefix)
	if !ok {
		return decoded{op: target}, apiError("UnknownOperationException", "unknown target %s", target)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		return decoded{op: op}, apiError("SerializationException", "Content-Type %q is not application/x-amz-json-1.1", ct)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decoded{op: op}, apiError("SerializationException", "reading the request: %v", err)
	}
	o, ok := logsOps[op]
	if !ok {
		return decoded{op: op}, apiError("UnknownOperationException", "awsserver does not serve %s", target)
	}
	return o.read(op, jsonRequest{op, body})
}

// The response documents.

type startQueryResponse struct {
	QueryID *string `json:"queryId,omitempty"`
}

type resultField struct {
	Field *string `json:"field,omitempty"`
	Value *string `json:"value,omitempty"`
}

type queryStatistics struct {
	RecordsMatched float64 `json:"recordsMatched"`
	RecordsScanned float64 `json:"recordsScanned"`
	BytesScanned   float64 `json:"bytesScanned"`
}

type getQueryResultsResponse struct {
	Results    [][]resultField  `json:"results"`
	Statistics *queryStatistics `json:"statistics,omitempty"`
	Status     string           `json:"status,omitempty"`
}

type stopQueryResponse struct {
	Success bool `json:"success"`
}

type filteredLogEvent struct {
	LogStreamName *string `json:"logStreamName,omitempty"`
	Timestamp     *int64  `json:"timestamp,omitempty"`
	Message       *string `json:"message,omitempty"`
	IngestionTime *int64  `json:"ingestionTime,omitempty"`
	EventID       *string `json:"eventId,omitempty"`
}

type filterLogEventsResponse struct {
	Events             []filteredLogEvent `json:"events"`
	SearchedLogStreams []any              `json:"searchedLogStreams"`
	NextToken          *string            `json:"nextToken,omitempty"`
}

func encodeQueryResults(_ string, out *cloudwatchlogs.GetQueryResultsOutput) any {
	r := getQueryResultsResponse{Results: [][]resultField{}, Status: string(out.Status)}
	if s := out.Statistics; s != nil {
		r.Statistics = &queryStatistics{s.RecordsMatched, s.RecordsScanned, s.BytesScanned}
	}
	for _, row := range out.Results {
		xr := make([]resultField, len(row))
		for i, f := range row {
			xr[i] = resultField{f.Field, f.Value}
		}
		r.Results = append(r.Results, xr)
	}
	return r
}

func encodeFilterLogEvents(_ string, out *cloudwatchlogs.FilterLogEventsOutput) any {
	r := filterLogEventsResponse{Events: []filteredLogEvent{}, SearchedLogStreams: []any{}, NextToken: out.NextToken}
	for _, e := range out.Events {
		r.Events = append(r.Events, filteredLogEvent{e.LogStreamName, e.Timestamp, e.Message, e.IngestionTime, e.EventId})
	}
	return r
}

func (logsService) writeOutput(w http.ResponseWriter, reqID string, doc any) {
	writeJSON(w, "application/x-amz-json-1.1", reqID, http.StatusOK, doc)
}

func writeJSON(w http.ResponseWriter, contentType, reqID string, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.WriteHeader(status)
	w.Write(body)
}

// logsStatuses are the HTTP statuses CloudWatch Logs answers error codes with: 400 for the
// client's errors (throttling and AccessDenied included), 5xx for its own.
var logsStatuses = byStatus(map[int][]string{
	http.StatusServiceUnavailable: {"ServiceUnavailableException", "InternalFailure"},
	http.StatusForbidden:          {"MissingAuthenticationToken"},
})

func (logsService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	writeJSON(w, "application/x-amz-json-1.1", reqID, logsStatuses.of(code), map[string]string{"__type": code, "message": msg})
}
