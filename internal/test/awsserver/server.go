// Package awsserver is a local AWS for tests that speaks the real wire protocols: one HTTP
// server on 127.0.0.1 that serves the state of an *awsfake.Cloud to the real AWS SDK clients
// (or to the nodekeeper binary) over
//
//   - EC2's Query protocol: a form-encoded POST (Action=DescribeInstances&Version=2016-11-15&...)
//     answered with XML (without EC2's namespace, which the SDK does not read), errors as
//     <Response><Errors><Error><Code>..</Code><Message>..</Message></Error></Errors>..;
//     DescribeInstances, DescribeSubnets and DescribeInstanceTypes, with IDs, filters,
//     MaxResults and NextToken;
//   - CloudWatch Logs' JSON 1.1 (X-Amz-Target: Logs_20140328.OPERATION), errors as
//     {"__type":"CODE","message":".."}: StartQuery, GetQueryResults, StopQuery, FilterLogEvents;
//   - EKS's REST-JSON: GET /clusters/{name} (DescribeCluster), GET /clusters/{name}/node-groups
//     (ListNodegroups) and GET /clusters/{name}/node-groups/{nodegroup} (DescribeNodegroup),
//     errors with an X-Amzn-ErrorType header and a JSON body;
//   - Auto Scaling's Query protocol (awsQuery): a form like EC2's with Version=2011-01-01,
//     answered with XML in an ACTIONResult element, errors as <ErrorResponse><Error>..;
//     DescribeAutoScalingGroups;
//   - CloudWatch's Smithy RPC v2 CBOR (Smithy-Protocol: rpc-v2-cbor): GetMetricData
//     (cloudwatch.go).
//
// EC2's Query protocol serves DescribeLaunchTemplateVersions and DescribeVolumes too. Requests
// are routed by their shape: a Smithy-Protocol header is CloudWatch, an X-Amz-Target header is
// CloudWatch Logs, a path under /clusters/ is EKS, a form signed for the autoscaling service is
// Auto Scaling, anything else is EC2. A request without a SigV4 Authorization header is
// refused, as AWS does. The request is decoded into the SDK's input type and handed to the
// Cloud, whose answer (or error: awsfake's AccessDenied, UnauthorizedOperation, NotFound...) is
// encoded the way the service does (each service's table of operations: a typed decoder, the
// Cloud's method and an encoder, made by op), so that error naming (internal/aws.Explain) and
// the SDK's retries work over the wire exactly as against AWS. Each encoder carries the fields
// nodekeeper reads and the common neighbours of those (see the encoders); the package's tests
// compare the Cloud's answers with what the SDK decodes from the wire.
//
// Use:
//
//	cloud := awsfake.New()          // fill it as for any awsfake test
//	srv := awsserver.Start(t, cloud) // closed by t.Cleanup
//	srv.Setenv(t, "eu-west-1")       // in-process: AWS_ENDPOINT_URL=srv.URL, dummy credentials, ...
//	cmd.Env = append(os.Environ(), srv.Env(t, "eu-west-1")...) // or for a child process
//	...
//	srv.Calls()                      // what was asked for: [{ec2 DescribeInstances ...} ...]
//	srv.FailNext("DescribeSubnets", "RequestLimitExceeded", 2) // the next two calls are throttled
//
// New returns the bare http.Handler for a server of the caller's own. Import this package from
// tests only.
package awsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// The services, as Call.Service names them.
const (
	EC2  = "ec2"
	Logs = "logs"
	EKS  = "eks"
	// CloudWatch is metrics (Smithy RPC v2 CBOR, cloudwatch.go).
	CloudWatch = "cloudwatch"
	// AutoScaling is Auto Scaling's service name (its SigV4 signing name too).
	AutoScaling = "autoscaling"
)

// Call is one request the server answered.
type Call struct {
	Service   string // EC2, Logs, EKS or CloudWatch
	Operation string // the API operation, e.g. "DescribeInstances"
	// Region is the region of the request's SigV4 credential scope.
	Region string
	// Input is the decoded request: a pointer to the SDK's input type of the operation (e.g.
	// *ec2.DescribeInstancesInput); nil when the request could not be decoded.
	Input any
	// ErrorCode is the AWS error code answered, "" for a success.
	ErrorCode string
}

// Server serves one awsfake.Cloud. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of a server made by Start (http://127.0.0.1:PORT).
	URL string

	cloud *awsfake.Cloud
	mu    sync.Mutex
	calls []Call
	fail  map[string][]string // operation → error codes to answer, in order
	reqID int
}

// New returns the handler serving cloud.
func New(cloud *awsfake.Cloud) *Server {
	return &Server{cloud: cloud, fail: map[string][]string{}}
}

// Start serves cloud on 127.0.0.1 until the test ends.
func Start(t testing.TB, cloud *awsfake.Cloud) *Server {
	t.Helper()
	s := New(cloud)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("awsserver: %v", err)
	}
	hs := &httptest.Server{Listener: l, Config: &http.Server{Handler: s}}
	hs.Start()
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Cloud is the account the server serves.
func (s *Server) Cloud() *awsfake.Cloud { return s.cloud }

// Calls returns the requests answered so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Operations returns "service:Operation" of each request answered so far, in order (e.g.
// "ec2:DescribeInstances"), for compact assertions.
func (s *Server) Operations() []string {
	calls := s.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Service + ":" + c.Operation
	}
	return out
}

// Count is how many requests for operation were answered.
func (s *Server) Count(operation string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Operation == operation {
			n++
		}
	}
	return n
}

// FailNext makes the next n requests for operation fail with the AWS error code (e.g.
// "RequestLimitExceeded" or "ThrottlingException" to throttle, "InternalError"), before the
// Cloud sees them. The HTTP status is the one the service uses for the code.
func (s *Server) FailNext(operation, code string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fail[operation] = append(s.fail[operation], code)
	}
}

// Env returns the environment that points the AWS SDK's default configuration chain at the
// server and nowhere else: AWS_ENDPOINT_URL, dummy static credentials, the region, empty
// shared config and credentials files (made in a temporary directory of t) and no instance
// metadata. Append it to a child process's environment after os.Environ(): later entries win.
func (s *Server) Env(t testing.TB, region string) []string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config", "credentials"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatalf("awsserver: %v", err)
		}
	}
	env := []string{
		"AWS_ENDPOINT_URL=" + s.URL,
		"AWS_ACCESS_KEY_ID=AKIDAWSSERVERTEST",
		"AWS_SECRET_ACCESS_KEY=awsserver/test/secret/not/a/real/key",
		"AWS_REGION=" + region,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
	return env
}

// Setenv sets Env for the rest of the test (t.Setenv: not with t.Parallel), after unsetting
// every other AWS_ variable (profile, session token, service-specific endpoints...) so that
// the developer's own AWS configuration cannot leak in.
func (s *Server) Setenv(t testing.TB, region string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			t.Setenv(name, "") // restored when the test ends
			os.Unsetenv(name)
		}
	}
	for _, kv := range s.Env(t, region) {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
}

// ServeHTTP routes a request by its shape to the service it is for.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var svc service
	switch {
	case r.Header.Get("Smithy-Protocol") == "rpc-v2-cbor":
		svc = metricsService{}
	case r.Header.Get("X-Amz-Target") != "":
		svc = logsService{}
	case strings.HasPrefix(r.URL.Path, "/clusters/"):
		svc = eksService{}
	case signedService(r) == AutoScaling:
		svc = asgService{}
	default:
		svc = ec2Service{}
	}
	reqID := s.nextRequestID()
	req, err := svc.decode(r)
	call := Call{Service: svc.name(), Operation: req.op, Region: signedRegion(r), Input: req.in}
	if err == nil && !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		err = apiError("MissingAuthenticationToken", "Request is missing Authentication Token")
	}
	if err == nil {
		err = s.injected(req.op)
	}
	var out any
	if err == nil {
		out, err = req.call(r.Context(), s.cloud, req.in)
	}
	if err != nil {
		code, msg := "InternalFailure", err.Error()
		var api smithy.APIError
		if errors.As(err, &api) {
			code, msg = api.ErrorCode(), api.ErrorMessage()
		}
		call.ErrorCode = code
		s.record(call)
		svc.writeError(w, reqID, code, msg)
		return
	}
	s.record(call)
	svc.writeOutput(w, reqID, req.encode(reqID, out))
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *Server) injected(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	codes := s.fail[op]
	if len(codes) == 0 {
		return nil
	}
	s.fail[op] = codes[1:]
	return apiError(codes[0], "awsserver: injected %s", codes[0])
}

func (s *Server) nextRequestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqID++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.reqID)
}

// signedRegion is the region of a SigV4 Authorization header's credential scope
// (Credential=AKID/DATE/REGION/SERVICE/aws4_request).
func signedRegion(r *http.Request) string { return credentialScope(r, 2) }

// signedService is the service of the credential scope: what tells Auto Scaling's forms from
// EC2's.
func signedService(r *http.Request) string { return credentialScope(r, 3) }

func credentialScope(r *http.Request, part int) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[part]
}

func apiError(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// service is one AWS service's wire protocol.
type service interface {
	name() string
	// decode reads the request: its operation (also on an error, when known), SDK input and
	// handler; an error is answered to the client as it is.
	decode(r *http.Request) (decoded, error)
	// writeOutput answers with the response document of an operation's output.
	writeOutput(w http.ResponseWriter, reqID string, doc any)
	writeError(w http.ResponseWriter, reqID, code, msg string)
}

// handler serves one operation once its input is read: the Cloud's method, and the response
// document of its output.
type handler struct {
	call   func(ctx context.Context, cloud *awsfake.Cloud, in any) (any, error)
	encode func(reqID string, out any) any
}

// decoded is a request read: the operation, its SDK input, and its handler.
type decoded struct {
	op string
	in any
	handler
}

// operation is one operation of a protocol whose requests reach the operation as a Req (a
// Query form, a JSON document, a REST path, a CBOR value), in a service's table of them.
type operation[Req any] struct {
	decode func(Req) (any, error)
	handler
}

// op makes an operation of its typed parts: decode reads the SDK input from the protocol's
// request, call is the Cloud's method (a method expression such as
// (*awsfake.Cloud).DescribeInstances), encode turns the output into the response document.
func op[Req, In, Out, Opt any](decode func(Req) (*In, error), call func(*awsfake.Cloud, context.Context, *In, ...Opt) (*Out, error), encode func(reqID string, out *Out) any) operation[Req] {
	return operation[Req]{
		decode: func(r Req) (any, error) {
			in, err := decode(r)
			if err != nil {
				return nil, err // a nil Call.Input, not a typed nil
			}
			return in, nil
		},
		handler: handler{
			call: func(ctx context.Context, cloud *awsfake.Cloud, in any) (any, error) {
				return call(cloud, ctx, in.(*In))
			},
			encode: func(reqID string, out any) any { return encode(reqID, out.(*Out)) },
		},
	}
}

// read decodes the input of the operation named op from req.
func (o operation[Req]) read(op string, req Req) (decoded, error) {
	in, err := o.decode(req)
	return decoded{op, in, o.handler}, err
}

// optional is f of *p, or nil where p is nil: a member a document leaves out when it is not set.
func optional[T, U any](p *T, f func(T) U) *U {
	if p == nil {
		return nil
	}
	v := f(*p)
	return &v
}

// epochSeconds is how the JSON and CBOR protocols write a timestamp: seconds since the epoch, to
// the millisecond.
func epochSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// statuses are the HTTP statuses a service answers error codes with; a code not listed is the
// client's error, 400.
type statuses map[string]int

// byStatus is the statuses of the error codes listed under each.
func byStatus(codes map[int][]string) statuses {
	s := statuses{}
	for status, cs := range codes {
		for _, c := range cs {
			s[c] = status
		}
	}
	return s
}

func (s statuses) of(code string) int {
	if status, ok := s[code]; ok {
		return status
	}
	return http.StatusBadRequest
}
