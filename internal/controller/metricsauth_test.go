package controller

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// metricsRBACFile holds the metrics-reader ClusterRole deploy/ ships for Prometheus.
const metricsRBACFile = "../../deploy/kustomize/base/rbac-metrics.yaml"

// Every server gets a read, write and idle timeout by default.
func TestServerTimeoutsSet(t *testing.T) {
	srv := ServeOptions{}.server(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("server limits: read header %v, read %v, write %v, idle %v, header bytes %d; want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
}

// An idle keep-alive connection is closed by the server once the idle timeout has passed. The
// other timeouts are made long, so only the idle timeout can close it; the check's deadline is
// generous and only bounds a failing test.
func TestServerClosesIdleConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := testenv.FreeAddr(t)
	stop, err := ServeWith(ctx, "test", addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	}), ServeOptions{ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, WriteTimeout: time.Hour, IdleTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("the server did not keep the connection alive; the test needs a keep-alive connection")
	}
	// The connection is now idle: the server must close it (EOF), long before this deadline.
	if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	n, err := br.Read(make([]byte, 1))
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		t.Fatal("the idle connection was still open after a minute")
	case err == nil:
		t.Fatalf("read %d unexpected bytes from an idle connection", n)
	case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset"):
		t.Fatalf("reading the idle connection: %v", err)
	}
}

// --metrics-secure's handler against the real API server: a ServiceAccount token bound to the
// shipped metrics-reader ClusterRole gets the metrics, a token without it 403, no token or a
// token the API server does not know 401; over TLS with the self-signed certificate.
func TestSecureMetrics(t *testing.T) {
	ctx := context.Background()
	const ns = "metrics-auth-test"
	reader := createClusterRole(t, "metrics-reader", metricsRBACFile)
	readerCfg := env.BoundServiceAccount(t, ns, "prometheus", reader.Name, "nodekeeper-test-metrics-reader")
	otherCfg := env.ServiceAccount(t, ns, "someone-else")

	// The controller's own identity: only the two review permissions (the shipped metrics-auth role).
	authRole := createClusterRole(t, "metrics-auth", metricsRBACFile)
	authCfg := env.BoundServiceAccount(t, ns, "controller", authRole.Name, "nodekeeper-test-metrics-auth")

	auth, err := NewMetricsAuthForConfig(authCfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := MetricsTLS("")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := testenv.FreeAddr(t)
	stop, err := ServeWith(serveCtx, "metrics", addr, auth.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "nodekeeper_is_leader 1")
	})), ServeOptions{TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	client := promscrape.InsecureTLSClient()
	get := func(token string) (int, string) { return promscrape.Fetch(client, "https://"+addr+"/metrics", token) }

	// RBAC takes effect through the authorizer's informer: wait for the binding to be seen.
	var code int
	var body string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, body = get(readerCfg.BearerToken)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("a token with the metrics-reader role: %d %s", code, body)
	}
	if !strings.Contains(body, "nodekeeper_is_leader") {
		t.Errorf("metrics body: %q", body)
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"token without the role", otherCfg.BearerToken, http.StatusForbidden},
		{"anonymous", "", http.StatusUnauthorized},
		{"unknown token", "not-a-token", http.StatusUnauthorized},
		{"allowed token again (remembered)", readerCfg.BearerToken, http.StatusOK},
	} {
		if code, body := get(tc.token); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	// Plain HTTP to the TLS port is refused, it never reaches the handler.
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + "/metrics")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP got the metrics")
		}
	}
}

// --metrics-cert-dir: the certificate there is served, and a renewed one replaces it without a
// restart.
func TestMetricsTLSFromDir(t *testing.T) {
	dir := t.TempDir()
	write := func() *x509.Certificate {
		cert, err := selfSignedCertificate()
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		for name, block := range map[string]*pem.Block{
			"tls.crt": {Type: "CERTIFICATE", Bytes: cert.Certificate[0]},
			"tls.key": {Type: "PRIVATE KEY", Bytes: keyDER},
		} {
			if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	first := write()
	cfg, err := MetricsTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	served := func() *x509.Certificate {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	if !served().Equal(first) {
		t.Error("the certificate of --metrics-cert-dir is not served")
	}
	second := write()
	if !served().Equal(second) {
		t.Error("the renewed certificate is not served")
	}
	if _, err := MetricsTLS(t.TempDir()); err == nil {
		t.Error("an empty --metrics-cert-dir was accepted")
	}
}

// createClusterRole creates the ClusterRole named nodekeeper-<suffix> of file under a test name
// and returns it.
func createClusterRole(t *testing.T, suffix, file string) *rbacv1.ClusterRole {
	t.Helper()
	for _, doc := range yamlDocs(t, file) {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" || role.Name != "nodekeeper-"+suffix {
			continue
		}
		role.Name = "nodekeeper-test-" + suffix
		role.ResourceVersion = ""
		admin := env.AdminClient()
		created, err := admin.RbacV1().ClusterRoles().Create(context.Background(), &role, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = admin.RbacV1().ClusterRoles().Update(context.Background(), &role, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
		return created
	}
	t.Fatalf("%s has no ClusterRole nodekeeper-%s", file, suffix)
	return nil
}
