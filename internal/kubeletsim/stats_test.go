package kubeletsim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestStatsClassification(t *testing.T) {
	const lease = leasePathPrefix + "/n1"
	tests := []struct {
		method, path string
		code         int
		want         Stats
	}{
		{"GET", lease, 200, Stats{Total: 1, LeaseGet: 1}},
		{"GET", lease, 404, Stats{Total: 1, LeaseGet: 1, LeaseGetNotFound: 1, NotFound: 1}},
		{"POST", leasePathPrefix, 201, Stats{Total: 1, LeaseCreate: 1, LeaseCreated: 1}},
		{"POST", leasePathPrefix, 409, Stats{Total: 1, LeaseCreate: 1}},
		{"PUT", lease, 200, Stats{Total: 1, LeaseUpdate: 1}},
		{"PUT", lease, 201, Stats{Total: 1, LeaseUpdate: 1, LeaseUpdateCreated: 1}},
		{"PUT", lease, 409, Stats{Total: 1, LeaseUpdate: 1, LeaseConflict: 1}},
		{"GET", "/api/v1/nodes/n1", 404, Stats{Total: 1, NodeGet: 1, NodeGetNotFound: 1, NotFound: 1}},
		{"GET", "/api/v1/nodes", 200, Stats{Total: 1, NodeListWatch: 1}},
		{"POST", "/api/v1/nodes", 201, Stats{Total: 1, NodeCreate: 1}},
		{"PATCH", "/api/v1/nodes/n1/status", 200, Stats{Total: 1, NodeStatusPatch: 1}},
		{"GET", "/api/v1/nodes/n1/proxy/configz", 200, Stats{Total: 1}},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", 200, Stats{Total: 1}},
		{"PUT", lease, 0, Stats{Total: 1, LeaseUpdate: 1, Errors: 1}},
		{"PUT", lease, 429, Stats{Total: 1, LeaseUpdate: 1, Errors: 1}},
		{"GET", lease, 503, Stats{Total: 1, LeaseGet: 1, Errors: 1}},
	}
	for _, tt := range tests {
		var c counters
		c.record(tt.method, tt.path, tt.code)
		if got := c.snapshot(); got != tt.want {
			t.Errorf("%s %s → %d:\n got %+v\nwant %+v", tt.method, tt.path, tt.code, got, tt.want)
		}
	}
}

func TestStatsArithmetic(t *testing.T) {
	a := Stats{Total: 5, LeaseGet: 3, NotFound: 2, HeartbeatFailures: 1}
	b := Stats{Total: 2, LeaseGet: 1, NotFound: 2}
	if got := a.Sub(b); got != (Stats{Total: 3, LeaseGet: 2, HeartbeatFailures: 1}) {
		t.Errorf("Sub = %+v", got)
	}
	if got := a.Add(b); got != (Stats{Total: 7, LeaseGet: 4, NotFound: 4, HeartbeatFailures: 1}) {
		t.Errorf("Add = %+v", got)
	}
}

// TestCountingTransport checks that counts come from the wire, response codes included.
func TestCountingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusCreated)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	var c counters
	client := &http.Client{Transport: &countingTransport{next: http.DefaultTransport, c: &c}}
	for _, m := range []string{http.MethodGet, http.MethodPut} {
		req, _ := http.NewRequest(m, srv.URL+leasePathPrefix+"/n1", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := Stats{Total: 2, LeaseGet: 1, LeaseGetNotFound: 1, NotFound: 1, LeaseUpdate: 1, LeaseUpdateCreated: 1}
	if got := c.snapshot(); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if (&countingTransport{next: http.DefaultTransport}).WrappedRoundTripper() != http.DefaultTransport {
		t.Error("WrappedRoundTripper must expose the inner transport for CloseIdleConnectionsFor")
	}
}

func TestTrace(t *testing.T) {
	var tr trace
	t0 := time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)
	for i := 0; i < traceSize+10; i++ {
		tr.add(Request{Time: t0.Add(time.Duration(i) * time.Second), Method: "GET", Path: leasePathPrefix + "/n1", Code: 404})
	}
	all := tr.since(time.Time{})
	if len(all) != traceSize || !all[0].Time.Equal(t0.Add(10*time.Second)) || !all[traceSize-1].Time.Equal(t0.Add(time.Duration(traceSize+9)*time.Second)) {
		t.Fatalf("ring keeps the last %d in order: got %d, first %v", traceSize, len(all), all[0].Time)
	}
	if got := tr.since(t0.Add(time.Duration(traceSize+8) * time.Second)); len(got) != 2 {
		t.Errorf("since: got %d, want 2", len(got))
	}
	// Requests of one path share one string however many the ring holds (each request's path
	// is a fresh string), and paths past the intern limit are still recorded as they were.
	var shared trace
	for i := 0; i < 3; i++ {
		shared.add(Request{Time: t0, Method: strings.Clone("PUT"), Path: strings.Clone(leasePathPrefix + "/n1"), Code: 200})
	}
	for i := 0; i < traceInternLimit+5; i++ {
		shared.add(Request{Time: t0, Method: "GET", Path: fmt.Sprintf("/api/v1/nodes/n%d", i), Code: 200})
	}
	got := shared.since(time.Time{})
	if unsafe.StringData(got[0].Path) != unsafe.StringData(got[2].Path) || unsafe.StringData(got[0].Method) != unsafe.StringData(got[2].Method) {
		t.Error("the ring keeps a string per request instead of sharing the path and method")
	}
	if last := got[len(got)-1]; last.Path != fmt.Sprintf("/api/v1/nodes/n%d", traceInternLimit+4) || last.Method != "GET" || last.Code != 200 || !last.Time.Equal(t0) {
		t.Errorf("last request past the intern limit: %+v", last)
	}
	for _, tt := range []struct {
		r    Request
		want string
	}{
		{Request{Method: "PUT", Path: leasePathPrefix + "/n1", Code: 201}, "PUT leases/n1 201"},
		{Request{Method: "GET", Path: "/api/v1/nodes/n1", Code: 404}, "GET nodes/n1 404"},
		{Request{Method: "POST", Path: leasePathPrefix, Code: 201}, "POST leases 201"},
		{Request{Method: "GET", Path: "/version", Code: 200}, "GET /version 200"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
}
