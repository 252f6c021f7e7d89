package controller

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// Secure metrics (--metrics-secure), as kubebuilder's scaffold serves them: HTTPS, and every
// request authenticated with a TokenReview of its bearer token and authorized with a
// SubjectAccessReview of `get` on the non-resource URL of the request's path (/metrics). A
// Prometheus whose service account is bound to the metrics-reader ClusterRole scrapes it; anyone
// else gets 401 (no or an invalid token) or 403 (a valid token without that permission).

// MetricsAuthRateLimit is the client-side limit of the TokenReviews and SubjectAccessReviews:
// their own client, so that requests to /metrics never take from the lease work's rate limit.
var MetricsAuthRateLimit = kube.RateLimit{QPS: 5, Burst: 10}

// metricsAuthTTL is how long an allowed token is remembered, so that a Prometheus scraping every
// 15 s costs two reviews a minute at most. Denials are not remembered: they cost the caller a
// review each, within MetricsAuthRateLimit and maxReviewsInFlight.
const (
	metricsAuthTTL     = time.Minute
	metricsAuthEntries = 64
	maxReviewsInFlight = 4
	// reviewTimeout bounds one review; an API server that does not answer makes the request fail
	// with 503, it is not held.
	reviewTimeout = 10 * time.Second
)

// MetricsAuthPermissions are what secure metrics need beyond RequiredPermissions: creating
// TokenReviews and SubjectAccessReviews (cluster-scoped).
func MetricsAuthPermissions() []Permission {
	return []Permission{
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
}

// MetricsAuth authenticates and authorizes requests with the API server.
type MetricsAuth struct {
	client kube.Interface
	clock  clock.PassiveClock
	slots  chan struct{}

	mu      sync.Mutex
	allowed map[[sha256.Size]byte]authEntry // by token hash and path
}

type authEntry struct {
	expires time.Time
}

// NewMetricsAuthForConfig builds a MetricsAuth with its own client made from cfg
// (kube.SideConfig, MetricsAuthRateLimit).
func NewMetricsAuthForConfig(cfg *rest.Config) (*MetricsAuth, error) {
	client, err := kube.NewForConfig(kube.SideConfig(cfg, "metrics-auth", MetricsAuthRateLimit))
	if err != nil {
		return nil, err
	}
	return NewMetricsAuth(client, nil), nil
}

// NewMetricsAuth returns a MetricsAuth that reviews with client; clk (nil: the real clock)
// expires remembered decisions.
func NewMetricsAuth(client kube.Interface, clk clock.PassiveClock) *MetricsAuth {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &MetricsAuth{client: client, clock: clk, slots: make(chan struct{}, maxReviewsInFlight),
		allowed: map[[sha256.Size]byte]authEntry{}}
}

// Wrap returns h behind authentication and authorization.
func (a *MetricsAuth) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nodekeeper metrics"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		code, msg := a.check(r.Context(), token, r.URL.Path)
		if code != http.StatusOK {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="nodekeeper metrics"`)
			}
			http.Error(w, msg, code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// check answers 200, 401, 403, or 503 when the API server could not be asked.
func (a *MetricsAuth) check(ctx context.Context, token, path string) (int, string) {
	key := sha256.Sum256([]byte(path + "\x00" + token))
	now := a.clock.Now()
	a.mu.Lock()
	e, ok := a.allowed[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return http.StatusOK, ""
	}

	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	case <-ctx.Done():
		return http.StatusServiceUnavailable, "Service Unavailable"
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	logger := klog.FromContext(ctx)

	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		logger.Error(err, "Metrics: TokenReview failed")
		return http.StatusServiceUnavailable, "Service Unavailable: authentication failed"
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized"
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		logger.Error(err, "Metrics: SubjectAccessReview failed")
		return http.StatusServiceUnavailable, "Service Unavailable: authorization failed"
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, fmt.Sprintf("Forbidden: user %q may not get %s", u.Username, path)
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.allowed) >= metricsAuthEntries {
		for k, e := range a.allowed {
			if !now.Before(e.expires) {
				delete(a.allowed, k)
			}
		}
		if len(a.allowed) >= metricsAuthEntries {
			clear(a.allowed)
		}
	}
	a.allowed[key] = authEntry{expires: now.Add(metricsAuthTTL)}
	return http.StatusOK, ""
}

// MetricsTLS returns the TLS configuration of secure metrics: the certificate and key in certDir
// (tls.crt and tls.key, as a kubernetes.io/tls Secret mounts them; re-read when they change, so a
// renewed certificate is served without a restart), or, when certDir is empty, a self-signed
// certificate made at start-up.
func MetricsTLS(certDir string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir == "" {
		cert, err := selfSignedCertificate()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, nil
	}
	r := &certReloader{certFile: filepath.Join(certDir, "tls.crt"), keyFile: filepath.Join(certDir, "tls.key")}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.get() }
	return cfg, nil
}

// certReloader serves the key pair in two files, read again whenever either file's content
// changed (compared on each handshake, which costs two small reads).
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	certPEM []byte
	keyPEM  []byte
	cert    *tls.Certificate
}

func (r *certReloader) get() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return r.fallback(fmt.Errorf("metrics certificate: %w", err))
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return r.fallback(fmt.Errorf("metrics certificate key: %w", err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return r.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// A Secret being updated may show the new certificate beside the old key for a moment:
		// keep serving the last good pair.
		if r.cert != nil {
			return r.cert, nil
		}
		return nil, fmt.Errorf("metrics certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.certPEM, r.keyPEM, r.cert = certPEM, keyPEM, &cert
	return r.cert, nil
}

func (r *certReloader) fallback(err error) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil {
		return r.cert, nil
	}
	return nil, err
}

// selfSignedCertificate makes an ECDSA P-256 certificate for the pod's host name, localhost and
// the loopback addresses. Prometheus scrapes it with insecureSkipVerify (kubebuilder's default);
// give --metrics-cert-dir a certificate from cert-manager to verify it.
func selfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	host, _ := os.Hostname()
	dns := []string{"localhost"}
	if host != "" && host != "localhost" {
		dns = append([]string{host}, dns...)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "nodekeeper-controller-metrics"},
		DNSNames:              dns,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, errors.Join(errors.New("self-signed metrics certificate"), err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
