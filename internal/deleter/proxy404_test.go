package deleter

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// TestNodeAbsent: only the API server's own NotFound for that Node proves it absent.
func TestNodeAbsent(t *testing.T) {
	const name = "ip-10-0-0-1.ec2.internal"
	nodes := schema.GroupResource{Resource: "nodes"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the API server's NotFound for that Node", apierrors.NewNotFound(nodes, name), true},
		{"wrapped", errors.Join(errors.New("get"), apierrors.NewNotFound(nodes, name)), true},
		{"client-go's error for a 404 that was not a Status (an HTML page)",
			apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", nodes, name, "<html>404</html>", 0, true), false},
		{"NotFound for another Node", apierrors.NewNotFound(nodes, "ip-10-0-0-2.ec2.internal"), false},
		{"NotFound for a lease of that name", apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, name), false},
		{"NotFound for nodes of another group", apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "nodes"}, name), false},
		{"NotFound without details", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound}}, false},
		{"a 404 code without reason NotFound", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404,
			Details: &metav1.StatusDetails{Kind: "nodes", Name: name}}}, false},
		{"forbidden", apierrors.NewForbidden(nodes, name, errors.New("no")), false},
		{"a plain error", errors.New("not found"), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeAbsent(tc.err, name); got != tc.want {
				t.Errorf("NodeAbsent(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// interceptingProxy is a reverse proxy on 127.0.0.1 in front of the real API server (it
// authenticates as the admin) that answers the requests intercept picks itself, as a
// misconfigured proxy, gateway or load balancer would. It returns a client config for it.
func interceptingProxy(t *testing.T, intercept func(w http.ResponseWriter, r *http.Request) bool) *rest.Config {
	t.Helper()
	admin := env.AdminConfig()
	upstream, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = rt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if intercept(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: -1}
}

func htmlNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("<html><body><h1>404 Not Found</h1>nginx</body></html>"))
}

// TestProxy404IsNotAbsence (issue 10, item 7): a proxy in front of the real API server answers
// the Node read with a 404 of its own. Every way the deleter reads a Node (the controller's GET,
// gc's batched LIST, and the batch checker's GET rounds) must fail the check and delete nothing;
// the same read answered by the API server itself deletes.
func TestProxy404IsNotAbsence(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	type answer func(w http.ResponseWriter, name string)
	html := func(w http.ResponseWriter, _ string) { htmlNotFound(w) }
	plain := func(w http.ResponseWriter, _ string) { http.Error(w, "404 page not found", http.StatusNotFound) }
	jsonNotStatus := func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"no route","code":404}`))
	}
	otherNode := func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes \"someone-else\" not found","reason":"NotFound","details":{"name":"someone-else","kind":"nodes"},"code":404}`))
	}
	type checkerKind int
	const (
		get checkerKind = iota
		batchList
		batchGet
		prefetchList
		prefetchGet
	)
	tests := []struct {
		name    string
		checker checkerKind
		path    func(name string) string // the request the proxy answers itself; "" = none
		answer  answer
		want    Outcome
	}{
		{"GET answered by the API server (control)", get, nil, nil, Deleted},
		{"GET answered with an HTML 404", get, nodePath, html, Failed},
		{"GET answered with a plain-text 404", get, nodePath, plain, Failed},
		{"GET answered with a JSON 404 that is not a Status", get, nodePath, jsonNotStatus, Failed},
		{"GET answered with a NotFound Status for another Node", get, nodePath, otherNode, Failed},
		{"batched LIST answered by the API server (control)", batchList, nil, nil, Deleted},
		{"batched LIST answered with an HTML 404", batchList, listPath, html, Failed},
		{"batch checker's GET round answered with an HTML 404", batchGet, nodePath, html, Failed},
		{"batch checker's GET round answered by the API server (control)", batchGet, nil, nil, Deleted},
		// gc's checker: the live reads made ahead of the deletes, by LIST and (on clusters too
		// large to list per window) by GET. A check asked before the read-ahead claimed it takes
		// its own GET, so a 404 on the LIST alone may never be seen; the GETs always are.
		{"read-ahead LIST answered by the API server (control)", prefetchList, nil, nil, Deleted},
		{"read-ahead GET answered by the API server (control)", prefetchGet, nil, nil, Deleted},
		{"read-ahead GET answered with an HTML 404", prefetchGet, nodePath, html, Failed},
		{"read-ahead GET answered with a NotFound Status for another Node", prefetchGet, nodePath, otherNode, Failed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName()
			var intercepted atomic.Int32
			cfg := interceptingProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
				if tc.path == nil || r.Method != http.MethodGet || r.URL.Path != tc.path(name) {
					return false
				}
				intercepted.Add(1)
				tc.answer(w, name)
				return true
			})
			l := createLease(t, admin, name, 2*time.Hour)
			c, err := kube.NewClients(cfg)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Classify: lease.Options{GracePeriod: time.Hour}}
			switch tc.checker {
			case batchList:
				opts.NodeChecker = NewBatchNodeChecker(c.Metadata)
			case batchGet:
				b := NewBatchNodeChecker(c.Metadata)
				b.lastSize = 10 * listWorthIt // as if a LIST had found many Nodes: GETs, not a LIST
				opts.NodeChecker = b
			case prefetchList, prefetchGet:
				count := 1 // few Nodes: one LIST answers the window
				if tc.checker == prefetchGet {
					count = 1 << 30 // too many to list per window: GETs
				}
				p := NewPrefetchNodeChecker(c.Metadata, []string{name}, count, PrefetchOptions{})
				t.Cleanup(p.Close)
				if p.UsesList() != (tc.checker == prefetchList) {
					t.Fatalf("the read-ahead checker lists: %v, want %v", p.UsesList(), tc.checker == prefetchList)
				}
				opts.NodeChecker = p
			}
			d, err := New(c.Kube.CoordinationV1(), c.Metadata, opts)
			if err != nil {
				t.Fatal(err)
			}
			r := d.Delete(ctx, l, nil)
			if r.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s: %s", r.Outcome, tc.want, r.Reason)
			}
			if tc.path != nil && intercepted.Load() == 0 {
				t.Fatal("the proxy never answered the Node read: the test proves nothing")
			}
			_, err = admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case tc.want == Failed && err != nil:
				t.Fatalf("the lease is gone after a failed Node check: %v", err)
			case tc.want == Deleted && !apierrors.IsNotFound(err):
				t.Fatalf("the lease survived a proven absence: %v", err)
			}
			if tc.want == Failed && !strings.Contains(r.Reason, "Node "+name) {
				t.Errorf("reason %q does not name the Node", r.Reason)
			}
		})
	}
}

func nodePath(name string) string { return "/api/v1/nodes/" + name }
func listPath(string) string      { return "/api/v1/nodes" }
