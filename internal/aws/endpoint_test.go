package aws_test

import (
	"context"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// The endpoint tests build the clients the way the commands do, with Load (the SDK's default
// configuration chain), and check that the endpoint the user configured through the
// environment is the one the requests reach. The region is one no public endpoint exists for,
// so that a client that ignored the variable could not reach AWS either.

// isolateAWSEnv makes the default configuration chain see only dummy static credentials, the
// region and empty shared config and credentials files, with no instance metadata and no
// configured endpoint; the test then sets the endpoint variables it is about.
func isolateAWSEnv(t *testing.T, region string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			t.Setenv(name, "") // restores the old value at the end of the test
			os.Unsetenv(name)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{"config", "credentials"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// endpointServer answers the one operation each service is asked here with a documented
// minimal body, and records which services it saw.
type endpointServer struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

func newEndpointServer(t *testing.T) *endpointServer {
	e := &endpointServer{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var service, body string
		switch {
		case r.Header.Get("X-Amz-Target") != "":
			service, body = "logs", `{"success":true}`
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		case strings.HasPrefix(r.URL.Path, "/clusters/"):
			service, body = "eks", `{"cluster":{"name":"prod","status":"ACTIVE"}}`
			w.Header().Set("Content-Type", "application/json")
		case strings.Contains(r.Header.Get("Authorization"), "/autoscaling/aws4_request"):
			service, body = "autoscaling", `<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeAutoScalingGroupsResult><AutoScalingGroups/></DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		default:
			service, body = "ec2", `<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>1</requestId><subnetSet/></DescribeSubnetsResponse>`
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		}
		if !strings.Contains(r.Header.Get("Authorization"), "/eu-test-1/") {
			http.Error(w, "not signed for the region", http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.seen = append(e.seen, service)
		e.mu.Unlock()
		w.Write([]byte(body))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpointServer) saw(service string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.seen {
		if s == service {
			return true
		}
	}
	return false
}

// callEach calls one operation of each service through clients built by Load; it returns the
// error of each service's call.
func callEach(t *testing.T) map[string]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := allclients.Load(ctx, nkaws.LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// One attempt each: a request that went elsewhere is not worth retrying here.
	_, ec2Err := c.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}, func(o *ec2.Options) { o.RetryMaxAttempts = 1 })
	_, logsErr := c.Logs.StopQuery(ctx, &cloudwatchlogs.StopQueryInput{QueryId: new("q-1")}, func(o *cloudwatchlogs.Options) { o.RetryMaxAttempts = 1 })
	_, eksErr := c.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: new("prod")}, func(o *eks.Options) { o.RetryMaxAttempts = 1 })
	_, asgErr := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{}, func(o *autoscaling.Options) { o.RetryMaxAttempts = 1 })
	return map[string]error{"ec2": ec2Err, "logs": logsErr, "eks": eksErr, "autoscaling": asgErr}
}

// TestLoadHonoursAWSEndpointURL: AWS_ENDPOINT_URL sends EC2, CloudWatch Logs, EKS and Auto
// Scaling to the configured endpoint.
func TestLoadHonoursAWSEndpointURL(t *testing.T) {
	isolateAWSEnv(t, "eu-test-1")
	e := newEndpointServer(t)
	t.Setenv("AWS_ENDPOINT_URL", e.srv.URL)
	for service, err := range callEach(t) {
		if err != nil || !e.saw(service) {
			t.Errorf("%s did not reach AWS_ENDPOINT_URL: %v", service, err)
		}
	}
}

// TestLoadHonoursServiceEndpointURL: AWS_ENDPOINT_URL_EC2 (AWS_ENDPOINT_URL_AUTO_SCALING) sends
// EC2 (Auto Scaling) alone to its endpoint; the other services keep theirs (here
// AWS_ENDPOINT_URL, pointing at nothing that answers).
func TestLoadHonoursServiceEndpointURL(t *testing.T) {
	for variable, service := range map[string]string{"AWS_ENDPOINT_URL_EC2": "ec2", "AWS_ENDPOINT_URL_AUTO_SCALING": "autoscaling"} {
		t.Run(variable, func(t *testing.T) {
			isolateAWSEnv(t, "eu-test-1")
			e := newEndpointServer(t)
			closed := httptest.NewServer(http.NotFoundHandler())
			closed.Close()
			t.Setenv("AWS_ENDPOINT_URL", closed.URL)
			t.Setenv(variable, e.srv.URL)
			errs := callEach(t)
			if errs[service] != nil || !e.saw(service) {
				t.Errorf("%s did not reach %s: %v", service, variable, errs[service])
			}
			for other := range errs {
				if other != service && (errs[other] == nil || e.saw(other)) {
					t.Errorf("%s reached the endpoint of %s (err %v)", other, service, errs[other])
				}
			}
		})
	}
}
