package cwaudit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

const group = "/aws/eks/prod/cluster"

var t0 = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

func newCloud() *awsfake.Cloud {
	c := awsfake.New()
	c.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
	c.Filters[cwaudit.FilterPattern] = cwaudit.Matches
	c.PollsBeforeComplete = 1
	return c
}

// leaseRenewal is a matching event (a kubelet's lease update) with a unique auditID.
func leaseRenewal(id int, at time.Time) string {
	ts := at.UTC().Format(time.RFC3339Nano)
	node := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", id/250%250, id%250)
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a-%08d","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/%s","verb":"update","user":{"username":"system:node:%s","groups":["system:nodes"]},"sourceIPs":["10.0.0.1"],"userAgent":"kubelet/v1.31.0 (linux/amd64) kubernetes/1234567","objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"%s","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s"}`,
		id, node, node, node, ts, ts)
}

// podList is an event the filter drops.
func podList(id int, at time.Time) string {
	ts := at.UTC().Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"p-%08d","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"system:serviceaccount:kube-system:replicaset-controller"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s"}`, id, ts, ts)
}

func auditIDOf(msg string) string {
	i := strings.Index(msg, `"auditID":"`)
	rest := msg[i+len(`"auditID":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

func readAll(t *testing.T, src *cwaudit.Source) []string {
	t.Helper()
	rc, err := src.Input(context.Background()).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading the source: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestWindowsReadEveryEventOnce: 35,000 matching events in two hours, with bursts that the
// plan cannot foresee (events ingested after it), are read completely, once each, in time
// order, and no query is allowed to go past the 10,000-row limit.
func TestWindowsReadEveryEventOnce(t *testing.T) {
	tests := []struct {
		name          string
		planned, late int // matching events before and after the plan
		burst         int // of the late ones, in one second
		wantSplits    bool
	}{
		{name: "planned", planned: 35000},
		{name: "ingested after the plan", planned: 15000, late: 20000, wantSplits: true},
		{name: "one second above the limit", planned: 20000, late: 15000, burst: 12000, wantSplits: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCloud()
			c.MaxConcurrentQueries = 3
			end := t0.Add(2 * time.Hour)
			want := map[string]bool{}
			add := func(id int, at time.Time) {
				msg := leaseRenewal(id, at)
				want[auditIDOf(msg)] = true
				c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: at.UnixMilli(), Message: msg})
			}
			for i := 0; i < tc.planned; i++ {
				add(i, t0.Add(time.Duration(i)*(2*time.Hour)/time.Duration(tc.planned)))
			}
			// Noise the filter drops, events of other streams and outside the range.
			for i := 0; i < 5000; i++ {
				at := t0.Add(time.Duration(i) * 1440 * time.Millisecond)
				c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: at.UnixMilli(), Message: podList(i, at)})
				c.AddLogEvents(group, awsfake.LogEvent{Stream: "authenticator-0a1b", Timestamp: at.UnixMilli(), Message: leaseRenewal(900000+i, at)})
			}
			c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: t0.Add(-time.Millisecond).UnixMilli(), Message: leaseRenewal(990001, t0.Add(-time.Millisecond))},
				awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: end.UnixMilli(), Message: leaseRenewal(990002, end)})

			var progress strings.Builder
			src, err := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: end, Parallel: 3,
				PollInterval: time.Millisecond, RetryWait: time.Millisecond, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Plan(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.late; i++ {
				at := t0.Add(30*time.Minute + time.Duration(i)*time.Hour/time.Duration(tc.late))
				if i < tc.burst {
					at = t0.Add(time.Hour + time.Duration(i%1000)*time.Millisecond)
				}
				add(100000+i, at)
			}

			lines := readAll(t, src)
			got := map[string]int{}
			var prev int64
			for i, l := range lines {
				got[auditIDOf(l)]++
				ts, _ := time.Parse(time.RFC3339Nano, l[strings.Index(l, `"stageTimestamp":"`)+18:len(l)-2])
				if ts.UnixMilli() < prev {
					t.Fatalf("line %d out of time order", i+1)
				}
				prev = ts.UnixMilli()
			}
			for id, n := range got {
				if n > 1 {
					t.Errorf("%s read %d times", id, n)
				}
				if !want[id] {
					t.Errorf("%s should not have been read (filtered out or outside the range)", id)
				}
			}
			for id := range want {
				if got[id] == 0 {
					t.Errorf("%s lost", id)
				}
			}
			if len(lines) != len(want) || len(want) != tc.planned+tc.late {
				t.Errorf("read %d events, want %d", len(lines), len(want))
			}
			st := src.Stats()
			if (st.Splits > 0) != tc.wantSplits {
				t.Errorf("splits %d, want some: %v", st.Splits, tc.wantSplits)
			}
			if st.BytesScanned <= 0 || st.Events != int64(len(want)) {
				t.Errorf("stats %+v", st)
			}
			if c.MaxConcurrent() > 3 {
				t.Errorf("%d queries ran at once, the limit is 3", c.MaxConcurrent())
			}
			if !strings.Contains(progress.String(), "CloudWatch scanned") {
				t.Errorf("no summary on the progress stream:\n%s", progress.String())
			}
		})
	}
}

// TestFallbackToFilterLogEvents: where Insights is denied, FilterLogEvents pages through the
// same selection; where both are denied, the error names the permission.
func TestFallbackToFilterLogEvents(t *testing.T) {
	c := newCloud()
	c.PageSize = 700
	c.Deny[nkaws.PermStartQuery] = true
	for i := 0; i < 3000; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-1", Timestamp: at.UnixMilli(), Message: leaseRenewal(i, at)},
			awsfake.LogEvent{Stream: "kube-apiserver-audit-1", Timestamp: at.UnixMilli(), Message: podList(i, at)})
	}
	var progress strings.Builder
	src, _ := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(time.Hour), PollInterval: time.Millisecond, Progress: &progress})
	lines := readAll(t, src)
	if len(lines) != 3000 {
		t.Errorf("read %d events, want 3000", len(lines))
	}
	if st := src.Stats(); !st.UsedFallback || st.FilterPages != 5 {
		t.Errorf("stats %+v, want the fallback in 5 pages", st)
	}
	if !strings.Contains(progress.String(), "logs:StartQuery") {
		t.Errorf("progress does not say which permission Insights lacked:\n%s", progress.String())
	}

	c.Deny[nkaws.PermFilterLogEvents] = true
	src, _ = cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(time.Hour), PollInterval: time.Millisecond})
	rc, _ := src.Input(context.Background()).Open()
	_, err := io.ReadAll(rc)
	var ad *nkaws.AccessDeniedError
	if !errors.As(err, &ad) || ad.Permission != nkaws.PermFilterLogEvents {
		t.Errorf("error %v does not name %s", err, nkaws.PermFilterLogEvents)
	}
}

// TestConcurrencyLimitRetried: StartQuery refused for the account's concurrency limit (someone
// else's queries) is tried again, and the read completes.
func TestConcurrencyLimitRetried(t *testing.T) {
	c := newCloud()
	c.MaxConcurrentQueries = 1
	for i := 0; i < 30000; i++ {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-1", Timestamp: at.UnixMilli(), Message: leaseRenewal(i, at)})
	}
	src, _ := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(time.Hour), Parallel: 4,
		PollInterval: time.Millisecond, RetryWait: time.Millisecond})
	lines := readAll(t, src)
	if len(lines) != 30000 {
		t.Errorf("read %d events, want 30000", len(lines))
	}
	if src.Stats().Retries == 0 {
		t.Errorf("no StartQuery was refused: the test does not test the limit")
	}
}

// TestModernZombieNamedWithInstance: the audit trail of a kubelet >= 1.29 that outlived its
// Node, read from the fake log group through the unchanged analysis, names the node and its EC2
// instance; the node next to it that renews its lease normally is not named.
func TestModernZombieNamedWithInstance(t *testing.T) {
	c := newCloud()
	const zombie, instance, healthy = "ip-10-0-1-12.ec2.internal", "i-0598c7d356eba48d7", "ip-10-0-2-7.ec2.internal"
	ev := func(id string, at time.Time, verb, user, ua, resource, ns, name string, code int, extra string) {
		ts := at.UTC().Format(time.RFC3339Nano)
		nsPart := ""
		if ns != "" {
			nsPart = fmt.Sprintf(`"namespace":%q,`, ns)
		}
		msg := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":"/x","verb":%q,"user":{"username":%q%s},"sourceIPs":["10.0.1.12"],"userAgent":%q,"objectRef":{"resource":%q,%s"name":%q,"apiVersion":"v1"},"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
			id, verb, user, extra, ua, resource, nsPart, name, code, ts, ts)
		c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: at.UnixMilli(), Message: msg})
	}
	ev("del", t0, "delete", "kubernetes-admin", "kubectl/v1.31.0", "nodes", "", zombie, 200, "")
	ev("gc", t0.Add(30*time.Millisecond), "delete", "system:serviceaccount:kube-system:generic-garbage-collector", "kube-controller-manager/v1.31.0", "leases", "kube-node-lease", zombie, 200, "")
	extra := fmt.Sprintf(`,"extra":{"sessionName":[%q]}`, instance)
	for i := 0; i < 60; i++ {
		at := t0.Add(time.Duration(i+1) * 10 * time.Second)
		ev(fmt.Sprintf("zl%d", i), at, "get", "system:node:"+zombie, "kubelet/v1.31.0 (linux/amd64) kubernetes/abc", "leases", "kube-node-lease", zombie, 404, extra)
		ev(fmt.Sprintf("zn%d", i), at.Add(time.Millisecond), "get", "system:node:"+zombie, "kubelet/v1.31.0 (linux/amd64) kubernetes/abc", "nodes", "", zombie, 404, extra)
		ev(fmt.Sprintf("h%d", i), at.Add(2*time.Millisecond), "update", "system:node:"+healthy, "kubelet/v1.31.0 (linux/amd64) kubernetes/abc", "leases", "kube-node-lease", healthy, 200, `,"extra":{"sessionName":["i-0healthy000000000"]}`)
		ev(fmt.Sprintf("p%d", i), at.Add(3*time.Millisecond), "list", "system:serviceaccount:kube-system:replicaset-controller", "kcm", "pods", "", "", 200, "")
	}
	src, err := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0.Add(-time.Hour), End: t0.Add(time.Hour), PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze([]read.Input{src.Input(context.Background())}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Zombies) != 1 {
		t.Fatalf("%d zombies, want 1: %+v", len(rep.Zombies), rep.Zombies)
	}
	z := rep.Zombies[0]
	if z.Node != zombie || len(z.Identities) != 1 || z.Identities[0] != instance || z.Requests != 120 {
		t.Errorf("zombie %s identities %v requests %d; want %s with %s, 120 requests", z.Node, z.Identities, z.Requests, zombie, instance)
	}
	if rep.Totals.Events != 2+60*3 {
		t.Errorf("%d events analysed, want %d (the pod lists are filtered by CloudWatch)", rep.Totals.Events, 2+60*3)
	}
	if len(rep.Inputs) != 1 || !strings.HasPrefix(rep.Inputs[0].Name, "cloudwatch:"+group) {
		t.Errorf("inputs %+v", rep.Inputs)
	}
}

// TestQueryTimeoutStopsTheQuery: a query that CloudWatch keeps Running (here: never completes)
// is waited on for QueryTimeout only, then stopped with StopQuery so that it no longer counts
// against the account's concurrency limit, said so on the progress stream, and the read fails
// naming --query-timeout. Both the plan's counting query and a window's query are bounded.
func TestQueryTimeoutStopsTheQuery(t *testing.T) {
	for _, stage := range []string{"plan", "window"} {
		t.Run(stage, func(t *testing.T) {
			c := newCloud()
			for i := 0; i < 100; i++ {
				at := t0.Add(time.Duration(i) * time.Second)
				c.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-1", Timestamp: at.UnixMilli(), Message: leaseRenewal(i, at)})
			}
			var progress strings.Builder
			// A tiny timeout, not a measured one: the fake never completes the query, so only
			// the bound can end the wait.
			src, err := cwaudit.New(c, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(time.Hour),
				PollInterval: time.Millisecond, QueryTimeout: 20 * time.Millisecond, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if stage == "window" {
				if err := src.Plan(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			c.PollsBeforeComplete = 1 << 30 // Running for ever, as far as the test is concerned
			// Without the bound the wait would be CloudWatch's 60 minutes: the test gives up after
			// 30 s instead (a generous deadline, not a measurement).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rc, err := src.Input(ctx).Open()
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(rc)
			rc.Close()
			if err == nil || !strings.Contains(err.Error(), "did not complete within --query-timeout") {
				t.Fatalf("error %v, want one naming --query-timeout", err)
			}
			if n := c.Calls(nkaws.PermStopQuery); n == 0 {
				t.Errorf("StopQuery was not called")
			}
			if n := c.RunningQueries(); n != 0 {
				t.Errorf("%d queries still running after the read failed", n)
			}
			if !strings.Contains(progress.String(), "(--query-timeout): stopped it (StopQuery)") {
				t.Errorf("progress does not say the query was stopped:\n%s", progress.String())
			}
		})
	}
}
