// Package cwaudit reads an EKS cluster's kube-apiserver audit log from CloudWatch Logs and hands
// it to the audit analysis as one ordinary input, so that `nodekeeper audit --cloudwatch` needs no
// export by hand.
//
// CloudWatch does the filtering (see InsightsFilter): only the events the analysis needs cross
// the network. Logs Insights returns at most 10,000 rows a query, so the time range is cut into
// windows: one counting query (stats count(*) by bin) plans windows of about WindowRows matching
// events; a window that still hits the limit (events ingested since, or one busy bin) keeps the
// complete part of its rows and splits the rest in two, again and again. Windows run in
// parallel, at most Parallel queries at a time, and are streamed to the analysis in time order
// with a bounded look-ahead, so memory holds a few windows whatever the range. Where Insights is
// not allowed (AccessDenied on logs:StartQuery), FilterLogEvents pages through the same
// selection instead.
package cwaudit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
)

// RowLimit is the most rows one Logs Insights query returns.
const RowLimit = 10000

// DefaultQueryTimeout is how long one query (a window, or the plan's counting query) may run
// before it is stopped and the read fails. CloudWatch itself ends a query only after 60 minutes;
// a window of at most 10,000 filtered rows normally completes in seconds.
const DefaultQueryTimeout = 15 * time.Minute

// Options choose what to read.
type Options struct {
	LogGroup string
	// Start and End bound the events read: Start <= @timestamp < End.
	Start, End time.Time
	// Parallel is how many Insights queries run at once (0: 4). Insights allows an account a
	// few tens of concurrent queries, shared with everyone else's.
	Parallel int
	// WindowRows is the number of matching events the plan aims at per window (0: 8,000), a
	// margin under the 10,000-row limit for events ingested after the plan.
	WindowRows int
	// PollInterval is the wait between GetQueryResults calls (0: 500ms).
	PollInterval time.Duration
	// RetryWait is the first wait before StartQuery is tried again after the account's
	// concurrency limit refused it (0: 1s; doubled each time).
	RetryWait time.Duration
	// QueryTimeout bounds the wait for one query's results, from StartQuery on (0:
	// DefaultQueryTimeout). A query still running then is stopped (StopQuery), said so on
	// Progress, and the read fails.
	QueryTimeout time.Duration
	// Progress, when set, receives one line per finished window and a summary (stderr).
	Progress io.Writer
}

// Stats tell what reading cost.
type Stats struct {
	Queries        int64   // Insights queries run, the planning one included
	Windows        int64   // windows read (after splitting)
	Splits         int64   // windows that hit the row limit and were split
	Events         int64   // events handed to the analysis
	BytesScanned   float64 // as reported by Insights
	RecordsScanned float64
	FilterPages    int64 // FilterLogEvents pages (fallback)
	UsedFallback   bool  // Insights was denied: FilterLogEvents read the log
	Retries        int64 // StartQuery calls refused for the concurrency limit and tried again
}

// Source reads one log group.
type Source struct {
	api  allclients.LogsAPI
	opts Options
	sem  chan struct{}

	mu       sync.Mutex
	stats    Stats
	windows  []window
	planned  bool
	progress *progress
}

type window struct{ lo, hi int64 } // milliseconds, [lo, hi)

type row struct {
	ts  int64
	msg string
}

// New returns a source; nothing is called until Plan or the input is opened.
func New(api allclients.LogsAPI, opts Options) (*Source, error) {
	if opts.LogGroup == "" {
		return nil, errors.New("no log group: pass --log-group or --cluster")
	}
	if opts.Start.IsZero() || opts.End.IsZero() || !opts.Start.Before(opts.End) {
		return nil, fmt.Errorf("the time range %s – %s is empty", opts.Start.Format(time.RFC3339), opts.End.Format(time.RFC3339))
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if opts.WindowRows <= 0 || opts.WindowRows >= RowLimit {
		opts.WindowRows = 8000
	}
	if opts.RetryWait <= 0 {
		opts.RetryWait = time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	s := &Source{api: api, opts: opts, sem: make(chan struct{}, opts.Parallel)}
	s.progress = &progress{w: opts.Progress}
	return s, nil
}

// Stats returns the counters so far.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Name is the input's name in the report.
func (s *Source) Name() string {
	return fmt.Sprintf("cloudwatch:%s (%s streams, filtered by CloudWatch)", s.opts.LogGroup, StreamPrefix)
}

// Input is the log as one input of the audit analysis: JSON lines in time order.
func (s *Source) Input(ctx context.Context) read.Input {
	return read.Input{Name: s.Name(), Open: func() (io.ReadCloser, error) {
		ctx, cancel := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriterSize(pw, 256<<10)
			err := s.stream(ctx, func(msg string) error {
				s.mu.Lock()
				s.stats.Events++
				s.mu.Unlock()
				// One event per line: an audit event is one line of JSON; any newline in it
				// sits between tokens, where a space means the same.
				if strings.IndexByte(msg, '\n') >= 0 {
					msg = strings.ReplaceAll(msg, "\n", " ")
				}
				if _, err := bw.WriteString(msg); err != nil {
					return err
				}
				return bw.WriteByte('\n')
			})
			if err == nil {
				err = bw.Flush()
			}
			s.progress.done(s.Stats())
			pw.CloseWithError(err)
		}()
		return &pipeReader{PipeReader: pr, cancel: cancel}, nil
	}}
}

type pipeReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (p *pipeReader) Close() error {
	p.cancel()
	return p.PipeReader.Close()
}

// Plan runs the counting query and cuts the range into windows. Called before the analysis, it
// makes a denied or misconfigured Insights fail early; when Insights is denied it switches to
// FilterLogEvents and returns nil. The input calls it itself if it was not called.
func (s *Source) Plan(ctx context.Context) error {
	s.mu.Lock()
	planned := s.planned
	s.mu.Unlock()
	if planned {
		return nil
	}
	lo, hi := s.opts.Start.UnixMilli(), s.opts.End.UnixMilli()
	spanSec := (hi-lo+999)/1000 + 1
	binSec := max(int64(1), (spanSec+4999)/5000) // at most ~5,000 bins: well under the row limit
	q := queryText(fmt.Sprintf("stats count(*) as n by bin(%ds)", binSec))
	res, err := s.runQuery(ctx, lo, hi, q)
	if nkaws.IsAccessDenied(err) {
		s.progress.printf("Logs Insights not allowed (%v); reading with FilterLogEvents instead\n", err)
		s.mu.Lock()
		s.stats.UsedFallback, s.planned = true, true
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	type bin struct{ start, n int64 }
	var bins []bin
	for _, r := range res.Results {
		var b bin
		var okT, okN bool
		for _, f := range r {
			switch {
			case f.Field == nil || f.Value == nil:
			case strings.HasPrefix(*f.Field, "bin("):
				b.start, okT = parseInsightsTime(*f.Value)
			case *f.Field == "n":
				n, err := strconv.ParseFloat(*f.Value, 64)
				b.n, okN = int64(n), err == nil
			}
		}
		if !okT || !okN {
			return fmt.Errorf("%s: unexpected row in the counting query's results: %s", s.opts.LogGroup, describeRow(r))
		}
		bins = append(bins, b)
	}
	sort.Slice(bins, func(i, j int) bool { return bins[i].start < bins[j].start })
	// Pack bins into windows of about WindowRows events; a window boundary is a bin start.
	var windows []window
	cur, acc := lo, int64(0)
	for _, b := range bins {
		if acc > 0 && acc+b.n > int64(s.opts.WindowRows) && b.start > cur && b.start < hi {
			windows = append(windows, window{cur, b.start})
			cur, acc = b.start, 0
		}
		acc += b.n
	}
	windows = append(windows, window{cur, hi})
	s.mu.Lock()
	s.windows, s.planned = windows, true
	s.mu.Unlock()
	var total int64
	for _, b := range bins {
		total += b.n
	}
	s.progress.printf("cloudwatch: %s: about %d matching events from %s to %s, in %d windows\n",
		s.opts.LogGroup, total, s.opts.Start.UTC().Format(time.RFC3339), s.opts.End.UTC().Format(time.RFC3339), len(windows))
	return nil
}

func describeRow(r []logtypes.ResultField) string {
	var parts []string
	for _, f := range r {
		parts = append(parts, awssdk.ToString(f.Field)+"="+awssdk.ToString(f.Value))
	}
	return strings.Join(parts, " ")
}

// queryText builds a query over the audit streams with the selection, then tail.
func queryText(tail string) string {
	return "fields @timestamp, @message\n" +
		"| filter @logStream like /^" + StreamPrefix + "/\n" +
		"| filter " + InsightsFilter + "\n" +
		"| " + tail
}

// stream emits every selected event of the range in time order.
func (s *Source) stream(ctx context.Context, emit func(string) error) error {
	if err := s.Plan(ctx); err != nil {
		return err
	}
	if s.Stats().UsedFallback {
		return s.filterEvents(ctx, s.opts.Start.UnixMilli(), s.opts.End.UnixMilli(), func(rs []row) error {
			for _, r := range rs {
				if err := emit(r.msg); err != nil {
					return err
				}
			}
			return nil
		})
	}
	s.mu.Lock()
	windows := s.windows
	s.mu.Unlock()
	type result struct {
		rows []row
		err  error
	}
	// Look ahead by Parallel windows: every query slot busy, and at most that many windows of
	// rows held while the analysis catches up.
	lookahead := s.opts.Parallel
	pending := make([]chan result, len(windows))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	launch := func(i int) {
		ch := make(chan result, 1)
		pending[i] = ch
		go func() {
			rows, err := s.fetch(ctx, windows[i].lo, windows[i].hi)
			ch <- result{rows, err}
		}()
	}
	for i := 0; i < min(lookahead, len(windows)); i++ {
		launch(i)
	}
	for i := range windows {
		res := <-pending[i]
		pending[i] = nil
		if i+lookahead < len(windows) {
			launch(i + lookahead)
		}
		if res.err != nil {
			return res.err
		}
		s.mu.Lock()
		s.stats.Windows++
		st := s.stats
		s.mu.Unlock()
		s.progress.window(windows[i], len(res.rows), i+1, len(windows), st)
		for _, r := range res.rows {
			if err := emit(r.msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetch returns the selected events of [lo, hi) in time order, splitting the range when a
// query hits the row limit.
func (s *Source) fetch(ctx context.Context, lo, hi int64) ([]row, error) {
	res, err := s.runQuery(ctx, lo, hi, queryText(fmt.Sprintf("sort @timestamp asc\n| limit %d", RowLimit)))
	if err != nil {
		return nil, err
	}
	raw, err := parseRows(res.Results)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.opts.LogGroup, err)
	}
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].ts < raw[j].ts })
	if len(raw) < RowLimit || raw[len(raw)-1].ts >= hi {
		// Complete: every event of [lo, hi) is in raw (the query's whole seconds may add some
		// outside it, dropped here).
		return clip(raw, lo, hi), nil
	}
	// The limit cut the results: everything before the last row's millisecond is complete
	// (rows of that millisecond may be missing), the rest is read again in two halves.
	cut := raw[len(raw)-1].ts
	s.mu.Lock()
	s.stats.Splits++
	s.mu.Unlock()
	kept := clip(raw, lo, cut)
	if cut/1000 <= lo/1000 {
		// One second holds more selected events than a query returns, and Insights' time range
		// cannot be narrower than a second: FilterLogEvents takes milliseconds.
		secEnd := min(hi, (lo/1000+1)*1000)
		var sec []row
		if err := s.filterEvents(ctx, lo, secEnd, func(rs []row) error { sec = append(sec, rs...); return nil }); err != nil {
			return nil, err
		}
		if secEnd == hi {
			return sec, nil
		}
		rest, err := s.fetch(ctx, secEnd, hi)
		return append(sec, rest...), err
	}
	mid := cut + (hi-cut)/2
	mid = mid / 1000 * 1000 // split on a second: Insights ranges are whole seconds
	if mid <= cut || hi-cut <= 1000 {
		rest, err := s.fetch(ctx, cut, hi)
		return append(kept, rest...), err
	}
	var left, right []row
	var lerr, rerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		right, rerr = s.fetch(ctx, mid, hi)
	}()
	left, lerr = s.fetch(ctx, cut, mid)
	wg.Wait()
	if lerr != nil {
		return nil, lerr
	}
	if rerr != nil {
		return nil, rerr
	}
	out := append(kept, left...)
	return append(out, right...), nil
}

func clip(rows []row, lo, hi int64) []row {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].ts >= lo })
	j := sort.Search(len(rows), func(i int) bool { return rows[i].ts >= hi })
	return rows[i:j]
}

func parseRows(results [][]logtypes.ResultField) ([]row, error) {
	out := make([]row, 0, len(results))
	for _, r := range results {
		var x row
		var okT, okM bool
		for _, f := range r {
			if f.Field == nil || f.Value == nil {
				continue
			}
			switch *f.Field {
			case "@timestamp":
				x.ts, okT = parseInsightsTime(*f.Value)
			case "@message":
				x.msg, okM = *f.Value, true
			}
		}
		if !okT || !okM {
			return nil, fmt.Errorf("unexpected row in Logs Insights results (want @timestamp and @message): %s", describeRow(r))
		}
		out = append(out, x)
	}
	return out, nil
}

// parseInsightsTime reads "2006-01-02 15:04:05.000" (UTC) into milliseconds.
func parseInsightsTime(s string) (int64, bool) {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// runQuery runs one Insights query over [lo, hi) milliseconds (widened to whole seconds, both
// ends inclusive as StartQuery takes them) and waits for its results.
func (s *Source) runQuery(ctx context.Context, lo, hi int64, q string) (*cloudwatchlogs.GetQueryResultsOutput, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	in := &cloudwatchlogs.StartQueryInput{
		LogGroupName: &s.opts.LogGroup,
		StartTime:    awssdk.Int64(lo / 1000),
		EndTime:      awssdk.Int64((hi - 1) / 1000),
		QueryString:  &q,
		Limit:        awssdk.Int32(RowLimit),
	}
	var id string
	backoff := s.opts.RetryWait
	for attempt := 0; ; attempt++ {
		out, err := s.api.StartQuery(ctx, in)
		if err == nil {
			id = awssdk.ToString(out.QueryId)
			break
		}
		// Other people's queries count against the account's concurrency limit too; the SDK's
		// retries may not outlast them.
		if isLimitExceeded(err) && attempt < 8 {
			s.mu.Lock()
			s.stats.Retries++
			s.mu.Unlock()
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		return nil, nkaws.Explain(nkaws.PermStartQuery, err)
	}
	s.mu.Lock()
	s.stats.Queries++
	s.mu.Unlock()
	wait := s.opts.PollInterval
	deadline := time.NewTimer(s.opts.QueryTimeout)
	defer deadline.Stop()
	for {
		out, err := s.api.GetQueryResults(ctx, &cloudwatchlogs.GetQueryResultsInput{QueryId: &id})
		if err != nil {
			s.stop(id)
			return nil, nkaws.Explain(nkaws.PermGetQueryResults, err)
		}
		switch out.Status {
		case logtypes.QueryStatusComplete:
			if st := out.Statistics; st != nil {
				s.mu.Lock()
				s.stats.BytesScanned += st.BytesScanned
				s.stats.RecordsScanned += st.RecordsScanned
				s.mu.Unlock()
			}
			return out, nil
		case logtypes.QueryStatusScheduled, logtypes.QueryStatusRunning, "":
		default:
			return nil, fmt.Errorf("Logs Insights query %s on %s over %s – %s ended %s", id, s.opts.LogGroup,
				time.UnixMilli(lo).UTC().Format(time.RFC3339), time.UnixMilli(hi).UTC().Format(time.RFC3339), out.Status)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			s.stop(id)
			return nil, ctx.Err()
		case <-deadline.C:
			stopErr := s.stop(id)
			span := time.UnixMilli(lo).UTC().Format(time.RFC3339) + " – " + time.UnixMilli(hi).UTC().Format(time.RFC3339)
			stopped := "stopped it (StopQuery)"
			if stopErr != nil {
				stopped = fmt.Sprintf("StopQuery failed (%v); CloudWatch ends it after 60 minutes", stopErr)
			}
			s.progress.printf("cloudwatch: Logs Insights query %s over %s still %s after %s (--query-timeout): %s\n",
				id, span, out.Status, s.opts.QueryTimeout, stopped)
			return nil, fmt.Errorf("Logs Insights query %s on %s over %s did not complete within --query-timeout %s (%s); "+
				"retry later, or raise --query-timeout", id, s.opts.LogGroup, span, s.opts.QueryTimeout, stopped)
		}
		wait = min(wait*3/2, 5*time.Second)
	}
}

// stop cancels a running query so that it stops counting against the concurrency limit.
func (s *Source) stop(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.api.StopQuery(ctx, &cloudwatchlogs.StopQueryInput{QueryId: &id})
	return err
}

func isLimitExceeded(err error) bool {
	var le *logtypes.LimitExceededException
	if errors.As(err, &le) {
		return true
	}
	var api interface{ ErrorCode() string }
	return errors.As(err, &api) && api.ErrorCode() == "LimitExceededException"
}

// filterEvents reads the selected events of [lo, hi) milliseconds with FilterLogEvents,
// page by page, and hands them on in time order.
func (s *Source) filterEvents(ctx context.Context, lo, hi int64, page func([]row) error) error {
	in := &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName:        &s.opts.LogGroup,
		LogStreamNamePrefix: awssdk.String(StreamPrefix),
		StartTime:           awssdk.Int64(lo),
		EndTime:             awssdk.Int64(hi - 1), // inclusive
		FilterPattern:       awssdk.String(FilterPattern),
	}
	var pages atomic.Int64
	return allclients.FilterLogEvents(ctx, s.api, in, func(evs []logtypes.FilteredLogEvent) error {
		rs := make([]row, 0, len(evs))
		for _, e := range evs {
			rs = append(rs, row{ts: awssdk.ToInt64(e.Timestamp), msg: awssdk.ToString(e.Message)})
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].ts < rs[j].ts })
		n := pages.Add(1)
		s.mu.Lock()
		s.stats.FilterPages++
		s.mu.Unlock()
		if n%10 == 0 && len(rs) > 0 {
			s.progress.printf("cloudwatch: FilterLogEvents page %d, at %s\n", n, time.UnixMilli(rs[len(rs)-1].ts).UTC().Format(time.RFC3339))
		}
		return page(rs)
	})
}
