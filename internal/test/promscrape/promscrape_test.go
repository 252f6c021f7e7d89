package promscrape

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestParse: every kind of metric becomes the series Prometheus stores, label values unescaped;
// a malformed exposition is an error.
func TestParse(t *testing.T) {
	const text = `# HELP nodekeeper_lease_deletions_total Deletes.
# TYPE nodekeeper_lease_deletions_total counter
nodekeeper_lease_deletions_total{result="deleted"} 3
nodekeeper_lease_deletions_total{result="precondition_failed"} 0
# TYPE nodekeeper_is_leader gauge
nodekeeper_is_leader 1
# TYPE nodekeeper_errors_total counter
nodekeeper_errors_total{reason="a \"quoted\"\nline"} 2
# TYPE nodekeeper_sync_seconds histogram
nodekeeper_sync_seconds_bucket{le="0.5"} 1
nodekeeper_sync_seconds_bucket{le="+Inf"} 2
nodekeeper_sync_seconds_sum 1.25
nodekeeper_sync_seconds_count 2
`
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("%s %g", s.Series(), s.Value))
	}
	want := []string{
		`nodekeeper_errors_total{reason="a \"quoted\"\nline"} 2`,
		`nodekeeper_is_leader 1`,
		`nodekeeper_lease_deletions_total{result="deleted"} 3`,
		`nodekeeper_lease_deletions_total{result="precondition_failed"} 0`,
		`nodekeeper_sync_seconds_bucket{le="+Inf"} 2`,
		`nodekeeper_sync_seconds_bucket{le="0.5"} 1`,
		`nodekeeper_sync_seconds_count 2`,
		`nodekeeper_sync_seconds_sum 1.25`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		name  string
		pairs []string
		want  float64
	}{
		{"nodekeeper_lease_deletions_total", nil, 3},
		{"nodekeeper_lease_deletions_total", []string{"result", "deleted"}, 3},
		{"nodekeeper_lease_deletions_total", []string{"result", "failed"}, 0},
		{"nodekeeper_is_leader", nil, 1},
	} {
		if v := Sum(got, tc.name, tc.pairs...); v != tc.want {
			t.Errorf("Sum(%s, %v) = %g, want %g", tc.name, tc.pairs, v, tc.want)
		}
	}
	for _, bad := range []string{"metric{le=\"1\" 1\n", "metric one\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

// TestFetch: the token goes as a bearer token only when given, the status and body come back as
// served (over TLS with a certificate InsecureTLSClient does not check), and a request that gets
// no answer is status 0 with the error as the body.
func TestFetch(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth == "" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		fmt.Fprintf(w, "auth=%q", auth)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, tc := range []struct {
		name, url, token string
		wantCode         int
		wantBody         string
	}{
		{"bearer token", srv.URL + "/metrics", "abc", http.StatusOK, `auth="Bearer abc"`},
		{"no token", srv.URL + "/metrics", "", http.StatusUnauthorized, `auth=""`},
		{"nothing listens", closed.URL + "/metrics", "abc", 0, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := Fetch(InsecureTLSClient(), tc.url, tc.token)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("Fetch: %d %q, want %d and a body with %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}
