// Package awsfake is a stateful in-memory AWS for tests: EC2 instances, subnets, instance types,
// EBS volumes and launch template versions; Auto Scaling groups; CloudWatch metric samples
// answered by GetMetricData's statistics; CloudWatch Logs log groups with timestamped events, Logs Insights queries that honour
// the time range, the row limit and the concurrency limit, and FilterLogEvents with pagination;
// EKS clusters and managed node groups. It implements the interfaces of internal/aws, so that every test of the AWS
// paths shares one model of AWS instead of mocking calls one by one.
//
// Query text is not a general Logs Insights engine: the fake understands the commands nodekeeper
// sends (fields, filter, sort @timestamp, limit, stats count(*) by bin) and looks the text of a
// filter up in Filters, registered by the test with the Go predicate that means the same. An
// unregistered filter is a MalformedQueryException, so a query changed without its predicate
// fails the tests instead of matching everything.
package awsfake

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/smithy-go"

	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// DefaultRowLimit is the most rows one Logs Insights query returns.
const DefaultRowLimit = 10000

// LogEvent is one event of a log group.
type LogEvent struct {
	Stream    string
	Timestamp int64 // milliseconds since the epoch
	Message   string
}

// Cloud is the fake AWS account. Set its exported fields before use; the methods are safe for
// concurrent use.
type Cloud struct {
	mu sync.Mutex

	Instances     []ec2types.Instance
	Subnets       []ec2types.Subnet
	InstanceTypes []ec2types.InstanceTypeInfo
	Volumes       []ec2types.Volume // EBS volumes (volumes.go)
	Clusters      map[string]ekstypes.Cluster
	// Nodegroups are EKS managed node groups, of the cluster their ClusterName names;
	// LaunchTemplateVersions every version of every launch template (launchtemplates.go);
	// AutoScalingGroups the Auto Scaling groups.
	Nodegroups             []ekstypes.Nodegroup
	LaunchTemplateVersions []ec2types.LaunchTemplateVersion
	AutoScalingGroups      []asgtypes.AutoScalingGroup

	// Filters maps the text of an Insights filter command (after "filter ") or a
	// FilterLogEvents filter pattern to the predicate it stands for.
	Filters map[string]func(message string) bool
	// Deny makes every call needing one of these IAM actions (e.g. "logs:StartQuery") fail
	// with AccessDenied, as IAM does.
	Deny map[string]bool
	// Before, when set, runs before each DescribeInstances call, outside the fake's lock, with
	// the call's context and IAM action; an error it returns is the call's answer. Tests make
	// AWS slow with it (block until the context ends) or throttle (Throttled). See faults.go.
	Before func(ctx context.Context, permission string) error
	// EndlessPages makes DescribeInstances and DescribeSubnets
	// answer every page with one fresh instance or subnet and a fresh NextToken: an
	// endpoint whose listing never ends (the SDK's paginators stop on an empty or repeated token
	// only). See faults.go.
	EndlessPages bool
	// PageSize bounds the items of one page of the paginated APIs (0: 1000; FilterLogEvents:
	// 10,000).
	PageSize int
	// RowLimit is Insights' row limit (0: 10,000).
	RowLimit int
	// MaxConcurrentQueries is Insights' concurrency limit (0: 30); a StartQuery above it
	// fails with LimitExceededException.
	MaxConcurrentQueries int
	// PollsBeforeComplete is how many GetQueryResults calls answer Running before Complete.
	PollsBeforeComplete int

	memo    map[string]map[string]bool // filter text → message → match, filters being pure
	metrics map[string][]MetricSample  // CloudWatch metric key → samples (metrics.go)
	logs    map[string][]LogEvent
	sorted  map[string]bool
	queries map[string]*query
	nextQID int
	running int

	endlessPage   int
	calls         map[string]int
	typesAsked    []ec2types.InstanceType
	maxRunning    int
	rowsReturned  int64
	bytesScanned  int64
	windowsOverMx int
}

type query struct {
	status  string
	polls   int
	rows    [][2]string // field/value pairs of @timestamp, @message (or bin, n)
	fields  []string
	stats   [3]float64 // matched, scanned, bytes
	running bool
}

// New returns an empty account.
func New() *Cloud {
	return &Cloud{Clusters: map[string]ekstypes.Cluster{}, Filters: map[string]func(string) bool{}, Deny: map[string]bool{}}
}

// AddLogEvents adds events to a log group (in any order).
func (c *Cloud) AddLogEvents(group string, evs ...LogEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs == nil {
		c.logs, c.sorted = map[string][]LogEvent{}, map[string]bool{}
	}
	c.logs[group] = append(c.logs[group], evs...)
	c.sorted[group] = false
}

// Calls returns how many times the operation allowed by an IAM action was called.
func (c *Cloud) Calls(permission string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[permission]
}

// CalledPermissions lists, sorted, the IAM actions of every operation called so far (allowed
// or denied): what the code under test really asked AWS for.
func (c *Cloud) CalledPermissions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.calls))
	for p := range c.calls {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// MaxConcurrent is the most Insights queries that were running at once.
func (c *Cloud) MaxConcurrent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxRunning
}

// BytesScanned is the total Insights reported as scanned.
func (c *Cloud) BytesScanned() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytesScanned
}

// call counts a call and answers AccessDenied when the permission is denied. c.mu is held.
func (c *Cloud) call(permission string) error {
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[permission]++
	if c.Deny[permission] {
		code := "AccessDeniedException"
		switch {
		case strings.HasPrefix(permission, "ec2:"):
			code = "UnauthorizedOperation"
		case strings.HasPrefix(permission, "autoscaling:"):
			code = "AccessDenied" // the Query protocol's code, as IAM answers Auto Scaling
		}
		return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf("User: arn:aws:sts::111122223333:assumed-role/readonly/test is not authorized to perform: %s", permission)}
	}
	return nil
}

// answer is every operation's frame: under the fake's lock it counts the call of the IAM action
// permission (answering AccessDenied when Deny names it) and answers in with f, which runs
// with c.mu held.
func answer[In, Out any](c *Cloud, permission string, in In, f func(In) (Out, error)) (Out, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(permission); err != nil {
		var none Out
		return none, err
	}
	return f(in)
}

func apiError(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// defaultPageSize is the page size of the paginated APIs when neither PageSize nor the call
// sets one.
const defaultPageSize = 1000

// pageSize bounds a page: PageSize, else the service's default def, and at most what the call
// asked for (MaxResults, Limit...; nil or 0: no ask).
func (c *Cloud) pageSize(def int, asked *int32) int {
	n := c.PageSize
	if n <= 0 {
		n = def
	}
	if asked != nil && *asked > 0 && int(*asked) < n {
		n = int(*asked)
	}
	return n
}

// checkPageSize refuses a page size asked for (MaxResults, MaxRecords...: name, as the service
// spells it) outside [1, most], with the service's error code.
func checkPageSize(asked *int32, most int32, code, name string) error {
	if asked != nil && (*asked < 1 || *asked > most) {
		return apiError(code, "%s must be between 1 and %d", name, most)
	}
	return nil
}

// paged is one page of a paginated answer and the token of the next (nil after the last).
type paged[T any] struct {
	items []T
	next  *string
}

// pageOf is the page of items that token and size ask for.
func pageOf[T any](items []T, token *string, size int) (paged[T], error) {
	from, to, next, err := page(token, len(items), size)
	if err != nil {
		return paged[T]{}, err
	}
	return paged[T]{items[from:to], next}, nil
}

// page cuts [0,total) at the offset in token; it returns the range and the next token.
func page(token *string, total, size int) (from, to int, next *string, err error) {
	if token != nil {
		from, err = strconv.Atoi(*token)
		if err != nil || from < 0 || from > total {
			return 0, 0, nil, apiError("InvalidParameterValue", "invalid NextToken %q", *token)
		}
	}
	to = min(total, from+size)
	if to < total {
		s := strconv.Itoa(to)
		next = &s
	}
	return from, to, next, nil
}

// match applies a registered filter, remembering the answer: tests run many queries over the
// same events, and the predicates decode JSON. c.mu is held.
func (c *Cloud) match(text string, f func(string) bool, msg string) bool {
	if c.memo == nil {
		c.memo = map[string]map[string]bool{}
	}
	m := c.memo[text]
	if m == nil {
		m = map[string]bool{}
		c.memo[text] = m
	}
	v, ok := m[msg]
	if !ok {
		v = f(msg)
		m[msg] = v
	}
	return v
}

func (c *Cloud) events(group string) []LogEvent {
	evs := c.logs[group]
	if !c.sorted[group] {
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Timestamp < evs[j].Timestamp })
		c.sorted[group] = true
	}
	return evs
}
