//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// registerGrace is doctor's and the controller's --register-grace in these tests: moto launches
// an instance now (its LaunchTime cannot be set), and an instance launched within the grace is
// not reported as one without a Node.
const registerGrace = "1ms"

// clusterAccount is moto's account holding the EKS cluster demo and two running instances
// tagged for it, neither with a Node: one named as c's zombie lease, and orphan.
func clusterAccount(t *testing.T, c cluster) (a *account, zombie, orphan string) {
	t.Helper()
	a = newAccount(t)
	a.cluster()
	zombie = *a.instance(c.zombie, clusterTags).InstanceId
	orphan = *a.instance(motoNodeName(), clusterTags).InstanceId
	return a, zombie, orphan
}

func TestDoctorAWS(t *testing.T) {
	c := seedCluster(t, 1)
	a, _, orphan := clusterAccount(t, c)
	u := a.user()
	for _, tc := range []struct {
		name string
		args []string
	}{
		// The EKS cluster's name comes from the kubeconfig's current context, named by ARN.
		{"cluster from the context", nil},
		// kubectl's --cluster picks the kubeconfig entry; its ARN names the EKS cluster demo,
		// never "arn:...".
		{"--cluster ARN", []string{"--cluster", eksARN}},
		{"--context ARN", []string{"--context", eksARN}},
		// --eks-cluster names it outright, by name or by ARN.
		{"--eks-cluster NAME", []string{"--eks-cluster", eksClusterName}},
		{"--eks-cluster ARN", []string{"--eks-cluster", eksARN}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := len(a.srv.Calls())
			r := u.run(append([]string{"doctor", "--aws", "--register-grace", registerGrace, "-o", "json"}, tc.args...)...)
			if r.code != exitFindings {
				t.Fatalf("want exit 3 (an instance without its Node), got:\n%s", r)
			}
			calls := a.calls(t, from, r)
			filters := filtersOf(calls, "DescribeInstances")
			if !hasFilter(filters, "tag-key=kubernetes.io/cluster/"+eksClusterName) || !hasFilter(filters, "tag:eks:cluster-name="+eksClusterName) {
				t.Errorf("DescribeInstances did not look for the instances of %s: %v", eksClusterName, filters)
			}
			noARNAsName(t, calls)
			rep := decode[doctorReport](t, r, "DoctorReport")
			if rep.findings()["NK801 instance/"+orphan] == "" && !strings.Contains(r.stdout, orphan) {
				t.Errorf("the instance without a Node (%s) is not reported (findings %v):\n%s", orphan, slices.Sorted(maps.Keys(rep.findings())), r)
			}
		})
	}
}

// TestLeasesAWS: leases --aws names the instance of each zombie lease (DescribeInstances by
// private DNS name, 200 names a call). The 101 zombies' instances are 101 reservations: moto
// answers a DescribeInstances without MaxResults 100 reservations a page, so the one call takes
// two pages, and an instance of the second page is named too.
func TestLeasesAWS(t *testing.T) {
	c := seedCluster(t, 1)
	a, zombieID, _ := clusterAccount(t, c)
	want := map[string]string{c.zombie: zombieID}
	names := make([]string, 100)
	subnets := make([]string, len(names))
	for i := range names {
		names[i] = motoNodeName()
		subnets[i] = a.subnet(ipOf(names[i]))
	}
	ids := make([]string, len(names))
	err := testenv.Parallel(len(names), 4, func(i int) error {
		inst, err := a.runInstance(names[i], subnets[i], clusterTags)
		ids[i] = awssdk.ToString(inst.InstanceId)
		return err
	})
	a.must(err)
	for i, name := range names {
		env.CreateNodeLease(t, name, time.Now())
		want[name] = ids[i]
	}
	u := a.user()
	r := u.expect(exitOK, "leases", "--aws", "-n", "kube-node-lease", "--class", "zombie", "-o", "wide")
	calls := a.calls(t, 0, r)
	pages, tokens := 0, 0
	for _, c := range calls {
		if c.Operation == "DescribeInstances" {
			pages++
			if c.Form.Get("NextToken") != "" {
				tokens++
			}
		}
	}
	if pages < 2 || tokens < 1 {
		t.Errorf("DescribeInstances answered %d pages (%d asked with NextToken), want the second page read", pages, tokens)
	}
	found := false
	for _, f := range filtersOf(calls, "DescribeInstances") {
		found = found || strings.HasPrefix(f, "private-dns-name=") && strings.Contains(f, c.zombie)
	}
	if !found {
		t.Errorf("DescribeInstances was not asked for the zombie's private DNS name %s", c.zombie)
	}
	for name, id := range want {
		line := ""
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.Contains(l, name) {
				line = l
			}
		}
		if !strings.Contains(line, id) {
			t.Errorf("the zombie %s is not shown with its instance %s: %q", name, id, line)
		}
	}
}

func TestMaxPodsAWS(t *testing.T) {
	a := newAccount(t)
	u := newUser(t)
	u.vars = append(u.vars, a.srv.Env(t, eksRegion)...)
	// With prefix delegation the ceiling (110 or 250) depends on the vCPU count: --aws asks EC2
	// for m5.large's (2), where the table alone would estimate it from the size name.
	r := u.expect(exitOK, "maxpods", "--aws", "--prefix-delegation", "m5.large")
	mustContain(t, r, r.stdout, "m5.large: max pods 110", "EC2 DescribeInstanceTypes")
	if got := a.srv.Operations(); len(got) != 1 || got[0] != "ec2:DescribeInstanceTypes" {
		t.Errorf("the server saw %v, want ec2:DescribeInstanceTypes", got)
	}
	a.calls(t, 0, r)
	// A type EC2 does not know either: exit 1, naming the permission asked.
	r = u.expect(exitFailed, "maxpods", "--aws", "m9z.large")
	mustContain(t, r, r.stderr, "m9z.large", "ec2:DescribeInstanceTypes")
	// Without --aws nothing is asked of AWS.
	n := len(a.srv.Calls())
	u.expect(exitOK, "maxpods", "--prefix-delegation", "m5.large")
	if len(a.srv.Calls()) != n {
		t.Errorf("maxpods without --aws called AWS: %v", a.srv.Operations()[n:])
	}
}

// TestAuditCloudWatch: audit --cloudwatch reads the seed's audit events from the cluster's log
// group, as EKS ships them, through Logs Insights and, where StartQuery is denied, through
// FilterLogEvents (from moto).
//
// Logs Insights stays on awsserver (over awsfake's copy of the events): moto 5.2.1's query
// engine (moto/logs/logs_query) reads only the fields, sort and limit commands; it ignores
// filter and stats, so the counting query that plans nodekeeper's windows would be answered
// with events instead of counts.
func TestAuditCloudWatch(t *testing.T) {
	a := newAccount(t)
	a.cluster()
	group := "/aws/eks/" + eksClusterName + "/cluster"
	stream := "kube-apiserver-audit-0a1b2c"
	ctx := context.Background()
	_, err := a.logs.CreateLogGroup(ctx, &cloudwatchlogs.CreateLogGroupInput{LogGroupName: &group})
	a.must(err)
	_, err = a.logs.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: &group, LogStreamName: &stream})
	a.must(err)

	// The seed's audit events, moved to 13 days ago: CloudWatch Logs takes no event older than
	// 14 days (PutLogEvents in the CloudWatch Logs API Reference), and moto refuses them too.
	// The events' own times move with them, so that --since/--until select them.
	events, base := shiftedSeed(t)
	cloud := awsfake.New()
	cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
	var put []logtypes.InputLogEvent
	for _, ev := range events {
		put = append(put, logtypes.InputLogEvent{Timestamp: awssdk.Int64(ev.at.UnixMilli()), Message: awssdk.String(ev.message)})
		cloud.AddLogEvents(group, awsfake.LogEvent{Stream: stream, Timestamp: ev.at.UnixMilli(), Message: ev.message})
	}
	out, err := a.logs.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: &group, LogStreamName: &stream, LogEvents: put})
	a.must(err)
	if out.RejectedLogEventsInfo != nil {
		t.Fatalf("moto rejected events: %+v", out.RejectedLogEventsInfo)
	}
	insights := awsserver.New(cloud)
	for _, op := range []string{"StartQuery", "GetQueryResults", "StopQuery"} {
		a.srv.Route("logs:"+op, insights)
	}
	u := a.user()
	window := []string{"--since", base.Add(-time.Hour).Format(time.RFC3339), "--until", base.Add(72 * time.Hour).Format(time.RFC3339)}

	for _, tc := range []struct {
		name       string
		args       []string
		deprecated bool
		denied     bool // StartQuery is denied: FilterLogEvents reads the events
	}{
		{"--eks-cluster ARN", []string{"--eks-cluster", eksARN}, false, false},
		{"cluster from the context", nil, false, false},
		// audit reads no cluster: its --cluster is the deprecated spelling of --eks-cluster.
		{"deprecated --cluster ARN", []string{"--cluster", eksARN}, true, false},
		{"FilterLogEvents where Insights is denied", nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := len(a.srv.Calls())
			if tc.denied {
				insights.FailNext("StartQuery", "AccessDeniedException", 1)
			}
			r := u.expect(exitOK, append(append([]string{"audit", "--cloudwatch", "-o", "json"}, window...), tc.args...)...)
			rep := decode[auditReport](t, r, "AuditReport")
			if tc.deprecated && !strings.Contains(r.stderr, "--eks-cluster") {
				t.Errorf("the deprecated --cluster does not point at --eks-cluster on stderr:\n%s", r)
			}
			if len(rep.Zombies) != 1 || rep.Zombies[0].Node != "ip-10-29-79-205.ap-northeast-2.compute.internal" {
				t.Errorf("zombies %+v:\n%s", rep.Zombies, r)
			}
			calls := a.srv.Calls()[from:]
			if len(calls) == 0 {
				t.Fatalf("the AWS server received no request: the binary did not use AWS_ENDPOINT_URL\n%s", r)
			}
			seen := map[string]bool{}
			for _, c := range calls {
				seen[c.Service+":"+c.Operation] = true
				if c.Region != eksRegion {
					t.Errorf("%s:%s signed for %q, want %s", c.Service, c.Operation, c.Region, eksRegion)
				}
				if c.Service != "logs" {
					continue
				}
				g, _ := c.JSON["logGroupName"].(string)
				if names, ok := c.JSON["logGroupNames"].([]any); ok && len(names) == 1 {
					g, _ = names[0].(string)
				}
				if (c.Operation == "StartQuery" || c.Operation == "FilterLogEvents") && g != group {
					t.Errorf("%s read log group %q, want %s", c.Operation, g, group)
				}
			}
			wantOp := "logs:GetQueryResults"
			if tc.denied {
				wantOp = "logs:FilterLogEvents"
			}
			if !seen["eks:DescribeCluster"] || !seen[wantOp] {
				t.Errorf("calls %v, want eks:DescribeCluster and %s", slices.Sorted(maps.Keys(seen)), wantOp)
			}
			noARNAsName(t, calls)
		})
	}
}

// seedEvent is one audit event of the seed as CloudWatch holds it.
type seedEvent struct {
	at      time.Time
	message string
}

// shiftedSeed returns the seed's audit events moved so that the first is 13 days ago (its
// requestReceivedTimestamp and stageTimestamp with it), in time order, and that first time.
func shiftedSeed(t *testing.T) ([]seedEvent, time.Time) {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "internal", "audit", "testdata", "seed001", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var raw []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	stage := func(ev map[string]any) time.Time {
		s, _ := ev["stageTimestamp"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("stageTimestamp %q: %v", s, err)
		}
		return at
	}
	slices.SortStableFunc(raw, func(x, y map[string]any) int { return stage(x).Compare(stage(y)) })
	base := time.Now().Add(-13 * 24 * time.Hour).UTC().Truncate(time.Second)
	shift := base.Sub(stage(raw[0]))
	var out []seedEvent
	for _, ev := range raw {
		at := stage(ev).Add(shift)
		for _, k := range []string{"requestReceivedTimestamp", "stageTimestamp"} {
			if s, ok := ev[k].(string); ok {
				if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
					ev[k] = v.Add(shift).UTC().Format("2006-01-02T15:04:05.000000Z")
				}
			}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seedEvent{at: at, message: string(b)})
	}
	return out, base
}
