package awsfake

import (
	"context"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ allclients.LogsAPI = (*Cloud)(nil)

// InsightsTimeLayout is how Logs Insights writes @timestamp and bin() values.
const InsightsTimeLayout = "2006-01-02 15:04:05.000"

var (
	reStats      = regexp.MustCompile(`^stats count\(\*\) as (\w+) by bin\((\d+)s\)$`)
	reStreamLike = regexp.MustCompile(`^@logStream like /\^([A-Za-z0-9_.-]+)/$`)
)

type parsedQuery struct {
	streamPrefix string
	filters      []string
	desc         bool
	limit        int
	statsName    string
	binSeconds   int64
}

func (c *Cloud) parseQuery(q string) (*parsedQuery, error) {
	pq := &parsedQuery{limit: 1000}
	for _, line := range strings.Split(q, "\n") {
		cmd := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "|"))
		switch {
		case cmd == "":
		case strings.HasPrefix(cmd, "fields "):
		case strings.HasPrefix(cmd, "filter "):
			text := strings.TrimPrefix(cmd, "filter ")
			if m := reStreamLike.FindStringSubmatch(text); m != nil {
				pq.streamPrefix = m[1]
				continue
			}
			if _, ok := c.Filters[text]; !ok {
				return nil, apiError("MalformedQueryException", "awsfake: no predicate registered for filter %q", text)
			}
			pq.filters = append(pq.filters, text)
		case cmd == "sort @timestamp asc":
			pq.desc = false
		case cmd == "sort @timestamp desc":
			pq.desc = true
		case strings.HasPrefix(cmd, "limit "):
			n, err := strconv.Atoi(strings.TrimPrefix(cmd, "limit "))
			if err != nil || n <= 0 || n > c.rowLimit() {
				return nil, apiError("MalformedQueryException", "limit must be between 1 and %d", c.rowLimit())
			}
			pq.limit = n
		case reStats.MatchString(cmd):
			m := reStats.FindStringSubmatch(cmd)
			pq.statsName = m[1]
			pq.binSeconds, _ = strconv.ParseInt(m[2], 10, 64)
			if pq.binSeconds <= 0 {
				return nil, apiError("MalformedQueryException", "bad bin")
			}
		default:
			return nil, apiError("MalformedQueryException", "awsfake: unsupported query command %q", cmd)
		}
	}
	return pq, nil
}

func (c *Cloud) rowLimit() int {
	if c.RowLimit > 0 {
		return c.RowLimit
	}
	return DefaultRowLimit
}

// inRange returns the events of group with from <= timestamp <= to (milliseconds).
func (c *Cloud) inRange(group string, from, to int64) []LogEvent {
	evs := c.events(group)
	lo := sort.Search(len(evs), func(i int) bool { return evs[i].Timestamp >= from })
	hi := sort.Search(len(evs), func(i int) bool { return evs[i].Timestamp > to })
	return evs[lo:hi]
}

// StartQuery implements LogsAPI. The time range is inclusive at both ends, in seconds; the end
// second is taken whole (the widest reading of the API reference).
func (c *Cloud) StartQuery(_ context.Context, in *cloudwatchlogs.StartQueryInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error) {
	return answer(c, nkaws.PermStartQuery, in, c.startQuery)
}

func (c *Cloud) startQuery(in *cloudwatchlogs.StartQueryInput) (*cloudwatchlogs.StartQueryOutput, error) {
	maxQ := c.MaxConcurrentQueries
	if maxQ <= 0 {
		maxQ = 30
	}
	if c.running >= maxQ {
		return nil, apiError("LimitExceededException", "Account maximum query concurrency limit of [%d] reached.", maxQ)
	}
	if in.QueryString == nil || in.StartTime == nil || in.EndTime == nil || (in.LogGroupName == nil && len(in.LogGroupNames) == 0) {
		return nil, apiError("InvalidParameterException", "queryString, startTime, endTime and a log group are required")
	}
	if *in.EndTime < *in.StartTime {
		return nil, apiError("InvalidParameterException", "endTime is before startTime")
	}
	groups := in.LogGroupNames
	if in.LogGroupName != nil {
		groups = append(groups, *in.LogGroupName)
	}
	pq, err := c.parseQuery(*in.QueryString)
	if err != nil {
		return nil, err
	}
	q := &query{status: "Running", running: true}
	var matched []LogEvent
	for _, g := range groups {
		if _, ok := c.logs[g]; !ok {
			return nil, apiError("ResourceNotFoundException", "Log group '%s' does not exist", g)
		}
		for _, ev := range c.inRange(g, *in.StartTime*1000, *in.EndTime*1000+999) {
			q.stats[1]++
			q.stats[2] += float64(len(ev.Message))
			if !strings.HasPrefix(ev.Stream, pq.streamPrefix) {
				continue
			}
			ok := true
			for _, f := range pq.filters {
				ok = ok && c.match(f, c.Filters[f], ev.Message)
			}
			if ok {
				matched = append(matched, ev)
			}
		}
	}
	q.stats[0] = float64(len(matched))
	if pq.statsName != "" {
		q.fields = []string{fmt.Sprintf("bin(%ds)", pq.binSeconds), pq.statsName}
		counts := map[int64]int{}
		var bins []int64
		for _, ev := range matched {
			b := ev.Timestamp / 1000 / pq.binSeconds * pq.binSeconds
			if counts[b] == 0 {
				bins = append(bins, b)
			}
			counts[b]++
		}
		sort.Slice(bins, func(i, j int) bool { return bins[i] < bins[j] })
		for _, b := range bins[:min(len(bins), c.rowLimit())] {
			q.rows = append(q.rows, [2]string{time.Unix(b, 0).UTC().Format(InsightsTimeLayout), strconv.Itoa(counts[b])})
		}
	} else {
		q.fields = []string{"@timestamp", "@message"}
		sort.SliceStable(matched, func(i, j int) bool {
			if pq.desc {
				return matched[i].Timestamp > matched[j].Timestamp
			}
			return matched[i].Timestamp < matched[j].Timestamp
		})
		for _, ev := range matched[:min(len(matched), pq.limit)] {
			q.rows = append(q.rows, [2]string{time.UnixMilli(ev.Timestamp).UTC().Format(InsightsTimeLayout), ev.Message})
		}
		c.rowsReturned += int64(len(q.rows))
	}
	c.bytesScanned += int64(q.stats[2])
	if c.queries == nil {
		c.queries = map[string]*query{}
	}
	c.nextQID++
	id := fmt.Sprintf("q-%08d", c.nextQID)
	c.queries[id] = q
	c.running++
	c.maxRunning = max(c.maxRunning, c.running)
	return &cloudwatchlogs.StartQueryOutput{QueryId: &id}, nil
}

// GetQueryResults implements LogsAPI: Running for PollsBeforeComplete calls, then Complete
// with every row (Insights does not paginate results).
func (c *Cloud) GetQueryResults(_ context.Context, in *cloudwatchlogs.GetQueryResultsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetQueryResultsOutput, error) {
	return answer(c, nkaws.PermGetQueryResults, in, c.getQueryResults)
}

func (c *Cloud) getQueryResults(in *cloudwatchlogs.GetQueryResultsInput) (*cloudwatchlogs.GetQueryResultsOutput, error) {
	q, err := c.query(in.QueryId)
	if err != nil {
		return nil, err
	}
	q.polls++
	if q.status == "Running" && q.polls > c.PollsBeforeComplete {
		q.status = "Complete"
		c.finish(q)
	}
	out := &cloudwatchlogs.GetQueryResultsOutput{Status: logtypes.QueryStatus(q.status),
		Statistics: &logtypes.QueryStatistics{RecordsMatched: q.stats[0], RecordsScanned: q.stats[1], BytesScanned: q.stats[2]}}
	if q.status != "Complete" {
		return out, nil
	}
	for i, r := range q.rows {
		ptr := fmt.Sprintf("%s/%d", str(in.QueryId), i)
		out.Results = append(out.Results, []logtypes.ResultField{
			{Field: &q.fields[0], Value: &r[0]}, {Field: &q.fields[1], Value: &r[1]},
			{Field: strPtr("@ptr"), Value: &ptr},
		})
	}
	return out, nil
}

// query is the query of an ID (GetQueryResults, StopQuery). c.mu is held.
func (c *Cloud) query(id *string) (*query, error) {
	q, ok := c.queries[str(id)]
	if !ok {
		return nil, apiError("ResourceNotFoundException", "query %s not found", str(id))
	}
	return q, nil
}

func strPtr(s string) *string { return &s }

func (c *Cloud) finish(q *query) {
	if q.running {
		q.running = false
		c.running--
	}
}

// StopQuery implements LogsAPI.
func (c *Cloud) StopQuery(_ context.Context, in *cloudwatchlogs.StopQueryInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StopQueryOutput, error) {
	return answer(c, nkaws.PermStopQuery, in, c.stopQuery)
}

func (c *Cloud) stopQuery(in *cloudwatchlogs.StopQueryInput) (*cloudwatchlogs.StopQueryOutput, error) {
	q, err := c.query(in.QueryId)
	if err != nil {
		return nil, err
	}
	stopped := q.status == "Running"
	if stopped {
		q.status = "Cancelled"
		c.finish(q)
	}
	return &cloudwatchlogs.StopQueryOutput{Success: stopped}, nil
}

// FilterLogEvents implements LogsAPI: LogStreamNamePrefix, StartTime and EndTime (milliseconds,
// both inclusive), FilterPattern (looked up in Filters; empty matches all), Limit and NextToken.
func (c *Cloud) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	return answer(c, nkaws.PermFilterLogEvents, in, c.filterLogEvents)
}

func (c *Cloud) filterLogEvents(in *cloudwatchlogs.FilterLogEventsInput) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	group := str(in.LogGroupName)
	if _, ok := c.logs[group]; !ok {
		return nil, apiError("ResourceNotFoundException", "The specified log group does not exist.")
	}
	p := str(in.FilterPattern)
	pred := c.Filters[p]
	if p != "" && pred == nil {
		return nil, apiError("InvalidParameterException", "awsfake: no predicate registered for filter pattern %q", p)
	}
	from, to := int64(0), int64(1<<62)
	if in.StartTime != nil {
		from = *in.StartTime
	}
	if in.EndTime != nil {
		to = *in.EndTime
	}
	prefix := str(in.LogStreamNamePrefix)
	var match []LogEvent
	for _, ev := range c.inRange(group, from, to) {
		if strings.HasPrefix(ev.Stream, prefix) && (pred == nil || c.match(p, pred, ev.Message)) {
			match = append(match, ev)
		}
	}
	lo, hi, next, err := page(in.NextToken, len(match), c.pageSize(10000, in.Limit)) // FilterLogEvents' default: 10,000 events
	if err != nil {
		return nil, err
	}
	out := &cloudwatchlogs.FilterLogEventsOutput{NextToken: next}
	for i, ev := range match[lo:hi] {
		id := fmt.Sprintf("%d-%d", ev.Timestamp, lo+i)
		out.Events = append(out.Events, logtypes.FilteredLogEvent{EventId: &id, LogStreamName: strPtr(ev.Stream),
			Timestamp: &ev.Timestamp, Message: strPtr(ev.Message), IngestionTime: &ev.Timestamp})
	}
	return out, nil
}

// RunningQueries is how many Insights queries are running now (started, neither complete nor
// stopped): what counts against the account's concurrency limit.
func (c *Cloud) RunningQueries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}
