// Package motoserver runs moto's AWS server (moto_server, the model of AWS that LocalStack is
// built on and that AWS users test against) on 127.0.0.1 for a test, and puts a small recording
// front in front of it: the URL a test hands to the binary through AWS_ENDPOINT_URL is the
// front's, which records each request (service, operation and region from its SigV4 credential
// scope, its form or JSON body) and passes it on to moto, or to a handler of the test's own for
// an operation moto cannot answer (Route: awsserver's, for what moto lacks).
//
// State is set up through moto's own API with the AWS SDK for Go (Config, signed for moto's own
// address, so the set-up calls are not recorded as the binary's).
//
// moto_server is a Python program (`pip install 'moto[server]==5.2.1'`; `make deps` installs it
// when missing). Where it is missing, Start fails the test when CI=true and skips it, saying how
// to get it, otherwise. moto runs in a process group of its own with a parent-death signal, and
// is killed with its group when the test ends.
//
// Use:
//
//	srv := motoserver.Start(t)
//	ec2.NewFromConfig(srv.Config(t, "us-west-2")).RunInstances(...)  // state, through moto's API
//	cmd.Env = append(cmd.Env, srv.Env(t, "us-west-2")...)            // AWS_ENDPOINT_URL=the front
//	srv.Route("cloudwatch:GetMetricData", awsserver.Start(t, cloud))  // what moto lacks
//	srv.Calls()                                                       // what the binary asked
//
// Import this package from tests only.
package motoserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/nodekeeper/nodekeeper/internal/test/syncbuf"
)

// Version is the moto release these tests were written against; `make deps` installs it.
const Version = "5.2.1"

// Install is what to run to get moto_server.
const Install = "python3 -m pip install 'moto[server]==" + Version + "'"

// Program is the name of moto's server on PATH; MOTO_SERVER overrides it with a path.
const Program = "moto_server"

// startTimeout bounds moto's start (its imports take seconds on a busy machine); it only
// catches a hang.
const startTimeout = 2 * time.Minute

// Account is the AWS account moto serves (MOTO_ACCOUNT_ID): the one of the ARNs it makes.
const Account = "111122223333"

// Dummy credentials, as a user of a local AWS sets them.
const (
	AccessKeyID     = "AKIDMOTOSERVERTEST"
	SecretAccessKey = "motoserver/test/secret/not/a/real/key"
)

// Call is one request the front received.
type Call struct {
	// Service is the SigV4 signing name of the request ("ec2", "logs", "eks", "autoscaling"),
	// but "cloudwatch" for CloudWatch metrics (signed "monitoring").
	Service string
	// Operation is the API operation: the Query protocols' Action, the JSON protocols'
	// X-Amz-Target operation, the RPC v2 path's last element, or for EKS's REST API the
	// operation its method and path stand for (DescribeCluster, ListNodegroups, ...).
	Operation string
	// Region is the region of the request's SigV4 credential scope.
	Region string
	// Path is the request's URL path, unescaped (EKS names its resources there).
	Path string
	// Form is a Query-protocol request's form (EC2, Auto Scaling); JSON is a JSON protocol's
	// body (CloudWatch Logs); Query is the URL query (EKS).
	Form  url.Values
	JSON  map[string]any
	Query url.Values
	// Status is the HTTP status answered.
	Status int
}

// Server is one moto_server and its recording front.
type Server struct {
	// URL is the front's base URL: what AWS_ENDPOINT_URL points at.
	URL string
	// MotoURL is moto's own base URL: where set-up calls go unrecorded.
	MotoURL string

	proxy  *httputil.ReverseProxy
	mu     sync.Mutex
	calls  []Call
	routes map[string]http.Handler
}

// Start runs moto_server on a free port of 127.0.0.1 and the front before it, both until the
// test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	prog := os.Getenv("MOTO_SERVER")
	if prog == "" {
		var err error
		if prog, err = exec.LookPath(Program); err != nil {
			msg := fmt.Sprintf("motoserver: %s is not on PATH; install it with `%s` (or `make deps`), or set MOTO_SERVER to its path", Program, Install)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	var moto string
	var lastErr error
	// A free port is found by listening on it and closing it; another process may take it
	// before moto binds it, so a moto that fails to start is tried again on another port.
	for range 3 {
		if moto, lastErr = run(t, prog); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("motoserver: %v", lastErr)
	}
	target, err := url.Parse(moto)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{MotoURL: moto, proxy: httputil.NewSingleHostReverseProxy(target), routes: map[string]http.Handler{}}
	front := httptest.NewServer(s)
	t.Cleanup(front.Close)
	s.URL = front.URL
	return s
}

// run starts one moto_server and waits until it answers; the process is killed with its group
// when the test ends.
func run(t testing.TB, prog string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(prog, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// moto reads no credentials or configuration of the developer's: a clean environment with
	// PATH (pyenv's shims need it) and HOME for Python's own files.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PYTHONUNBUFFERED=1", "MOTO_ACCOUNT_ID=" + Account}
	for _, name := range []string{"PYENV_ROOT", "PYENV_VERSION"} {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %v", prog, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		killGroup(cmd.Process)
		<-done
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-done:
			return "", fmt.Errorf("%s exited before answering on port %d:\n%s", prog, port, out.String())
		default:
		}
		if resp, err := client.Get(base + "/moto-api/data.json"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("%s did not answer on port %d within %s:\n%s", prog, port, startTimeout, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() && testing.Verbose() {
			t.Logf("moto_server's log:\n%s", clip(out.String()))
		}
	})
	return base, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func clip(s string) string {
	const max = 8000
	if len(s) > max {
		return "[...]\n" + s[len(s)-max:]
	}
	return s
}

// Config is an AWS SDK configuration for setting moto's state up: moto's own address (not the
// front's), dummy credentials and the region.
func (s *Server) Config(t testing.TB, region string) awssdk.Config {
	t.Helper()
	return awssdk.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		BaseEndpoint: awssdk.String(s.MotoURL),
		// moto answers at once or not at all: a retry would only hide a failure of set-up.
		RetryMaxAttempts: 1,
	}
}

// Env returns the environment that points the AWS SDK's default configuration chain at the
// front and nowhere else: AWS_ENDPOINT_URL, dummy static credentials, the region, empty shared
// config and credentials files (in a temporary directory of t) and no instance metadata.
func (s *Server) Env(t testing.TB, region string) []string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config", "credentials"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatalf("motoserver: %v", err)
		}
	}
	return []string{
		"AWS_ENDPOINT_URL=" + s.URL,
		"AWS_ACCESS_KEY_ID=" + AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + SecretAccessKey,
		"AWS_REGION=" + region,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Route sends the front's requests for operation ("service:Operation", as Operations names
// them, e.g. "cloudwatch:GetMetricData") to h instead of moto: for an operation moto lacks.
// Its callers name what moto lacks beside the call.
func (s *Server) Route(operation string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[operation] = h
}

// Calls returns the requests the front received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Operations returns "service:Operation" of each request so far, in order.
func (s *Server) Operations() []string {
	calls := s.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Service + ":" + c.Operation
	}
	return out
}

// maxBody bounds the request body the front reads to record (the binary's requests are small
// forms and JSON documents).
const maxBody = 8 << 20

// ServeHTTP records the request and hands it to moto, or to the handler routed for it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "motoserver: request body unreadable or over 8 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := describe(r, body)
	s.mu.Lock()
	h := s.routes[c.Service+":"+c.Operation]
	s.mu.Unlock()
	if h == nil {
		h = s.proxy
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(rec, r)
	c.Status = rec.status
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// describe names the request's service, operation and region from its shape.
func describe(r *http.Request, body []byte) Call {
	c := Call{Region: scope(r, 2), Service: scope(r, 3), Path: r.URL.Path, Query: r.URL.Query()}
	if c.Service == "monitoring" {
		c.Service = "cloudwatch"
	}
	switch {
	case r.Header.Get("Smithy-Protocol") != "":
		c.Operation = r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	case r.Header.Get("X-Amz-Target") != "":
		target := r.Header.Get("X-Amz-Target")
		c.Operation = target[strings.LastIndexByte(target, '.')+1:]
		_ = json.Unmarshal(body, &c.JSON)
	case strings.HasPrefix(r.URL.Path, "/clusters"):
		c.Operation = eksOperation(r.Method, r.URL.Path)
	default:
		if form, err := url.ParseQuery(string(body)); err == nil {
			c.Form = form
			c.Operation = form.Get("Action")
		}
	}
	return c
}

// eksOperation names the EKS REST operations nodekeeper reads; others are "METHOD path".
func eksOperation(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case method == http.MethodGet && len(parts) == 2:
		return "DescribeCluster"
	case method == http.MethodGet && len(parts) == 3 && parts[2] == "node-groups":
		return "ListNodegroups"
	case method == http.MethodGet && len(parts) == 4 && parts[2] == "node-groups":
		return "DescribeNodegroup"
	}
	return method + " " + path
}

// scope returns part i of the SigV4 credential scope (AKID/date/region/service/aws4_request).
func scope(r *http.Request, i int) string {
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if i < len(parts) {
		return parts[i]
	}
	return ""
}

// Filters returns the EC2 Query filters of a recorded request as "name=v1,v2" strings.
func (c Call) Filters() []string {
	var out []string
	for n := 1; ; n++ {
		name := c.Form.Get("Filter." + strconv.Itoa(n) + ".Name")
		if name == "" {
			return out
		}
		var values []string
		for v := 1; ; v++ {
			val, ok := c.Form["Filter."+strconv.Itoa(n)+".Value."+strconv.Itoa(v)]
			if !ok {
				break
			}
			values = append(values, val...)
		}
		out = append(out, name+"="+strings.Join(values, ","))
	}
}
