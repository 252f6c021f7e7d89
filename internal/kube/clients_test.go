package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// auditPolicy records, before it is handled, every request about the namespace of
// TestClientsArriveAsConfigured: the RequestReceived stage is written before the answer is sent,
// so the event is in the log by the time the client has its answer.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  namespaces: ["` + identityNamespace + `"]
- level: None
`

const identityNamespace = "client-identity"

// contentTypes records the Content-Type of every answer the API server sends.
type contentTypes struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	seen map[string]int
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.seen[resp.Header.Get("Content-Type")]++
		c.mu.Unlock()
	}
	return resp, err
}

// TestClientsArriveAsConfigured: clients made from the connection flags through Options reach the
// real API server as documented: the audit log names the command in the user agent, and the
// lease listing is answered in protobuf.
func TestClientsArriveAsConfigured(t *testing.T) {
	seedLeases(t, identityNamespace, 3)
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := env.KubeconfigPath()
	flags.KubeConfig = &kubeconfig
	o := NewOptions(flags, "leases", RateLimit{QPS: 0})
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS >= 0 || cfg.RateLimiter != nil {
		t.Errorf("--qps 0: QPS %g, limiter %v; want no client-side limit", cfg.QPS, cfg.RateLimiter)
	}
	answers := &contentTypes{seen: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { answers.rt = rt; return answers })
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Count only this pass's requests: another pass (-count=2) has listed the same namespace.
	before := auditedUserAgents(t, identityNamespace, "list")
	read := 0
	err = ListLeases(context.Background(), c.Kube.CoordinationV1(), identityNamespace, 2, func(l *coordinationv1.LeaseList) error {
		read += len(l.Items)
		return nil
	})
	if err != nil || read != 3 {
		t.Fatalf("listed %d leases (%v), want 3", read, err)
	}
	if n := answers.seen[protobufContentType]; n != 2 {
		t.Errorf("answers by content type %v: want both pages in %s", answers.seen, protobufContentType)
	}

	agents := auditedUserAgents(t, identityNamespace, "list")
	for agent, n := range before {
		if agents[agent] -= n; agents[agent] == 0 {
			delete(agents, agent)
		}
	}
	want := UserAgent("leases")
	if agents[want] != 2 || len(agents) != 1 {
		t.Errorf("user agents of the LIST requests in the audit log: %v, want %q twice", agents, want)
	}
}

// auditedUserAgents counts the user agents of the requests with verb about namespace in the
// audit log.
func auditedUserAgents(t *testing.T, namespace, verb string) map[string]int {
	t.Helper()
	f, err := os.Open(env.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	agents := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e struct {
			Stage     string `json:"stage"`
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Namespace string `json:"namespace"`
			} `json:"objectRef"`
		}
		if !strings.Contains(sc.Text(), namespace) {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		if e.Stage == "RequestReceived" && e.Verb == verb && e.ObjectRef.Namespace == namespace {
			agents[e.UserAgent]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return agents
}
