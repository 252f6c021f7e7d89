package aws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// recordingLogger keeps what the SDK logs.
type recordingLogger struct {
	mu   sync.Mutex
	logs []string
}

func (r *recordingLogger) Logf(c logging.Classification, format string, v ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, string(c)+" "+fmt.Sprintf(format, v...))
}

// TestLoadWithoutCredentials: on a machine with no credentials anywhere, LoadConfig fails with one line
// that names the sources to set (not the SDK's chain of providers), and the SDK's "falling back
// to IMDSv1" warning is not logged. The instance metadata service is a local server that answers
// 404 to the IMDSv2 token request and to the role lookup, as an address that is not EC2's
// metadata service does (the SDK warns on a 403, 404 or 405 to the token PUT:
// feature/ec2/imds token_provider.go); the SDK reaches it only through
// AWS_EC2_METADATA_SERVICE_ENDPOINT.
func TestLoadWithoutCredentials(t *testing.T) {
	var tokenAsked sync.Once
	asked := make(chan struct{})
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			tokenAsked.Do(func() { close(asked) })
		}
		http.NotFound(w, r)
	}))
	defer imds.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_CONFIG_FILE": filepath.Join(dir, "config"),
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_EC2_METADATA_DISABLED": "false",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.URL, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE": "IPv4",
	} {
		t.Setenv(k, v)
	}
	log := &recordingLogger{}
	_, err := LoadConfig(context.Background(), LoadOptions{Region: "us-east-1", Log: log})
	var nc *NoCredentialsError
	if !errors.As(err, &nc) {
		t.Fatalf("Load: %v, want a NoCredentialsError", err)
	}
	select {
	case <-asked:
	default:
		t.Fatal("the SDK never asked the local metadata service for a token: the warning was not provoked")
	}
	msg := err.Error()
	for _, want := range []string{"no AWS credentials", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "--profile", "aws sso login", "IRSA"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	for _, not := range []string{"\n", "failed to refresh cached credentials", "operation error", "IMDS"} {
		if strings.Contains(msg, not) {
			t.Errorf("message has %q (the SDK's chain): %s", not, msg)
		}
	}
	if nc.Headline() != msg || !strings.Contains(nc.Detail(), "refresh cached credentials") {
		t.Errorf("Headline %q, Detail %q", nc.Headline(), nc.Detail())
	}
	for _, l := range log.logs {
		if strings.Contains(l, "IMDSv1") {
			t.Errorf("the SDK's IMDSv1 warning was logged: %s", l)
		}
	}
}
