package awsserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
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

func (logsService) decode(r *http.Request) (string, any, error) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, logsTargetPrefix)
	if !ok {
		return target, nil, apiError("UnknownOperationException", "unknown target %s", target)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		return op, nil, apiError("SerializationException", "Content-Type %q is not application/x-amz-json-1.1", ct)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return op, nil, apiError("SerializationException", "reading the request: %v", err)
	}
	strict := func(v any) error {
		d := json.NewDecoder(strings.NewReader(string(body)))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return apiError("SerializationException", "%s: %v", op, err)
		}
		return nil
	}
	switch op {
	case "StartQuery":
		var q startQueryRequest
		if err := strict(&q); err != nil {
			return op, nil, err
		}
		return op, &cloudwatchlogs.StartQueryInput{LogGroupName: q.LogGroupName, LogGroupNames: q.LogGroupNames,
			StartTime: q.StartTime, EndTime: q.EndTime, QueryString: q.QueryString, Limit: q.Limit}, nil
	case "GetQueryResults", "StopQuery":
		var q queryIDRequest
		if err := strict(&q); err != nil {
			return op, nil, err
		}
		if op == "StopQuery" {
			return op, &cloudwatchlogs.StopQueryInput{QueryId: q.QueryID}, nil
		}
		return op, &cloudwatchlogs.GetQueryResultsInput{QueryId: q.QueryID}, nil
	case "FilterLogEvents":
		var q filterLogEventsRequest
		if err := strict(&q); err != nil {
			return op, nil, err
		}
		return op, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: q.LogGroupName, LogStreamNames: q.LogStreamNames,
			LogStreamNamePrefix: q.LogStreamNamePrefix, StartTime: q.StartTime, EndTime: q.EndTime,
			FilterPattern: q.FilterPattern, NextToken: q.NextToken, Limit: q.Limit, Interleaved: q.Interleaved}, nil
	}
	return op, nil, apiError("UnknownOperationException", "awsserver does not serve %s", target)
}

func (logsService) call(ctx context.Context, cloud *awsfake.Cloud, op string, in any) (any, error) {
	switch in := in.(type) {
	case *cloudwatchlogs.StartQueryInput:
		return cloud.StartQuery(ctx, in)
	case *cloudwatchlogs.GetQueryResultsInput:
		return cloud.GetQueryResults(ctx, in)
	case *cloudwatchlogs.StopQueryInput:
		return cloud.StopQuery(ctx, in)
	case *cloudwatchlogs.FilterLogEventsInput:
		return cloud.FilterLogEvents(ctx, in)
	}
	return nil, apiError("UnknownOperationException", "awsserver does not serve %s", op)
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

func (logsService) writeOutput(w http.ResponseWriter, reqID, op string, out any) {
	var resp any
	switch out := out.(type) {
	case *cloudwatchlogs.StartQueryOutput:
		resp = startQueryResponse{QueryID: out.QueryId}
	case *cloudwatchlogs.GetQueryResultsOutput:
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
		resp = r
	case *cloudwatchlogs.StopQueryOutput:
		resp = stopQueryResponse{out.Success}
	case *cloudwatchlogs.FilterLogEventsOutput:
		r := filterLogEventsResponse{Events: []filteredLogEvent{}, SearchedLogStreams: []any{}, NextToken: out.NextToken}
		for _, e := range out.Events {
			r.Events = append(r.Events, filteredLogEvent{e.LogStreamName, e.Timestamp, e.Message, e.IngestionTime, e.EventId})
		}
		resp = r
	default:
		logsService{}.writeError(w, reqID, "ServiceUnavailableException", fmt.Sprintf("awsserver: no encoder for %T of %s", out, op))
		return
	}
	writeJSON(w, "application/x-amz-json-1.1", reqID, http.StatusOK, resp)
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

// logsStatus is the HTTP status CloudWatch Logs answers an error code with: 400 for the
// client's errors (throttling and AccessDenied included), 5xx for its own.
func logsStatus(code string) int {
	switch code {
	case "ServiceUnavailableException", "InternalFailure":
		return http.StatusServiceUnavailable
	case "MissingAuthenticationToken":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

func (logsService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	writeJSON(w, "application/x-amz-json-1.1", reqID, logsStatus(code), map[string]string{"__type": code, "message": msg})
}
