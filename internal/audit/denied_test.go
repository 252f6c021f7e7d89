package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
)

// deniedEvent is one audit event of a request; code 401 events have no user, as the API server
// logs them.
func deniedEvent(t *testing.T, at time.Duration, code int, user any, verb string, ref map[string]any, uri string) string {
	fields := map[string]any{"verb": verb, "responseStatus": map[string]any{"code": code},
		"sourceIPs": []string{"10.1.2.3"}, "userAgent": "curl/8.5.0", "requestURI": uri}
	if user != nil {
		fields["user"] = user
	}
	if ref != nil {
		fields["objectRef"] = ref
	}
	return hostileEvent(t, at, fields)
}

func deniedLog(t *testing.T) string {
	ci := map[string]any{"username": "ci-bot", "groups": []string{"system:authenticated", "team-a", "team-b", "team-c", "team-d"}}
	kubelet := map[string]any{"username": "system:node:ip-10-0-0-7.ec2.internal", "groups": []string{"system:nodes", "system:authenticated"}}
	secret := map[string]any{"resource": "secrets", "namespace": "prod", "name": "db-password", "apiVersion": "v1"}
	pods := map[string]any{"resource": "pods", "apiVersion": "v1"}
	otherNode := map[string]any{"resource": "nodes", "name": "ip-10-0-0-9.ec2.internal", "apiVersion": "v1"}
	exec := map[string]any{"resource": "pods", "subresource": "exec", "namespace": "prod", "name": "web-0", "apiVersion": "v1"}
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, deniedEvent(t, time.Duration(i)*time.Minute, 403, ci, "get", secret, "/api/v1/namespaces/prod/secrets/db-password"))
	}
	for i := 0; i < 2; i++ {
		lines = append(lines, deniedEvent(t, time.Duration(i)*time.Minute+time.Second, 403, ci, "list", pods, "/api/v1/pods"))
	}
	for i := 0; i < 4; i++ {
		lines = append(lines, deniedEvent(t, time.Duration(i)*time.Minute+2*time.Second, 401, nil, "get", nil, "/api/v1/namespaces?limit=500"))
	}
	lines = append(lines,
		deniedEvent(t, 3*time.Second, 403, kubelet, "patch", otherNode, "/api/v1/nodes/ip-10-0-0-9.ec2.internal/status"),
		deniedEvent(t, 4*time.Second, 403, ci, "create", exec, "/api/v1/namespaces/prod/pods/web-0/exec"),
		// Allowed requests and a 404 are no denial.
		deniedEvent(t, 5*time.Second, 200, ci, "get", pods, "/api/v1/pods"),
		deniedEvent(t, 6*time.Second, 404, ci, "get", secret, "/api/v1/namespaces/prod/secrets/db-password"),
	)
	return strings.Join(lines, "\n")
}

func TestAccessDenied(t *testing.T) {
	r, err := analyze.AnalyzeReader("denied.log", strings.NewReader(deniedLog(t)), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := r.AccessDenied
	if d.Forbidden != 7 || d.Unauthorized != 4 || d.Distinct != 5 || d.Untracked != 0 {
		t.Fatalf("totals: %+v", d)
	}
	type row struct {
		code                              int
		user, groups, verb, res, ns, name string
		count                             int64
		first, last                       time.Duration
	}
	want := []row{
		{401, "", "", "get", "/api/v1/namespaces", "", "", 4, 2 * time.Second, 3*time.Minute + 2*time.Second},
		{403, "ci-bot", "team-a,team-b,team-c +1 more", "get", "secrets", "prod", "db-password", 3, 0, 2 * time.Minute},
		{403, "ci-bot", "team-a,team-b,team-c +1 more", "list", "pods", "", "", 2, time.Second, time.Minute + time.Second},
		{403, "system:node:ip-10-0-0-7.ec2.internal", "system:nodes", "patch", "nodes", "", "ip-10-0-0-9.ec2.internal", 1, 3 * time.Second, 3 * time.Second},
		{403, "ci-bot", "team-a,team-b,team-c +1 more", "create", "pods/exec", "prod", "web-0", 1, 4 * time.Second, 4 * time.Second},
	}
	if len(d.Rows) != len(want) {
		t.Fatalf("rows: %+v", d.Rows)
	}
	for i, w := range want {
		g := d.Rows[i]
		got := row{g.Code, g.User, g.Groups, g.Verb, g.Resource, g.Namespace, g.Name, g.Count, g.First.Sub(base), g.Last.Sub(base)}
		if got != w {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got, w)
		}
	}

	// Narrowed to one user, only that user's denials are listed and counted.
	r, err = analyze.AnalyzeReader("denied.log", strings.NewReader(deniedLog(t)), analyze.Options{User: "ci-bot", Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.AccessDenied; d.Forbidden != 6 || d.Unauthorized != 0 || d.Distinct != 3 || len(d.Rows) != 2 {
		t.Errorf("--user ci-bot --top 2: %+v", d)
	}
}

func TestGoldenAccessDenied(t *testing.T) {
	r, err := analyze.AnalyzeReader("denied.log", strings.NewReader(deniedLog(t)), analyze.Options{Top: 4})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := renderAll(t, r)
	assertGolden(t, "denied.txt", text)
	js, err := json.MarshalIndent(r.AccessDenied, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "denied.json", append(js, '\n'))
	var h bytes.Buffer
	if err := render.WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Access denied", "<td>pods/exec</td>", "<td>prod/db-password</td>", "<td>team-a,team-b,team-c "} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// Object names come from request URIs anyone may send: what a denial keeps is clipped.
func TestAccessDeniedClipsNames(t *testing.T) {
	long := strings.Repeat("é", 5000)
	line := deniedEvent(t, 0, 403, map[string]any{"username": "u", "groups": []string{strings.Repeat("g", 5000)}}, "get",
		map[string]any{"resource": "configmaps", "namespace": long, "name": long}, "/x")
	r, err := analyze.AnalyzeReader("x", strings.NewReader(line), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := r.AccessDenied.Rows[0]
	for _, f := range []string{row.Namespace, row.Name, row.Groups} {
		if len(f) > read.MaxDeniedField+len("…") || !strings.HasSuffix(f, "…") {
			t.Errorf("field of %d bytes kept: %.40q…", len(f), f)
		}
	}
}
