package kubeletstub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint is one simulated kubelet: a port in the namespace with its own /configz answer.
type Endpoint struct {
	Port int

	hits    atomic.Int64
	mu      sync.Mutex
	body    []byte
	status  int
	clients map[string]int
}

// Hits is the number of requests for the served path this endpoint answered.
func (e *Endpoint) Hits() int64 { return e.hits.Load() }

// SetConfigz sets the answer body (see ConfigzBody) and a 200 status.
func (e *Endpoint) SetConfigz(body []byte) { e.SetBody(body) }

// SetBody sets the answer body (a /configz or /metrics answer) and a 200 status.
func (e *Endpoint) SetBody(body []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body, e.status = body, http.StatusOK
}

// SetStatus makes the endpoint answer with an HTTP error status.
func (e *Endpoint) SetStatus(code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = code
}

// Clients returns the common names of the client certificates seen (the API server's kubelet
// client identity) with their request counts.
func (e *Endpoint) Clients() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.clients {
		out[k] = v
	}
	return out
}

// ConfigzBody wraps a kubelet configuration the way the kubelet's /configz does.
func ConfigzBody(cfg map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{"kubeletconfig": cfg})
}

// Server serves many endpoints from one namespace.
type Server struct {
	ns        *Netns
	endpoints []*Endpoint
	byPort    map[int]*Endpoint
	srv       *http.Server
	wg        sync.WaitGroup
	closeOnce sync.Once
	other     atomic.Int64
	// inFlight and maxInFlight count the requests being answered, now and at most at once.
	inFlight, maxInFlight atomic.Int64
	// path is the one path answered (/configz, /metrics), contentType its answer's type.
	path, contentType string
}

// Start opens count kubelet endpoints in ns, serving /configz over HTTPS; body(i) is endpoint
// i's initial /configz answer.
func Start(ns *Netns, count int, body func(i int) []byte) (*Server, error) {
	cert, err := selfSigned(ns.NSIP)
	if err != nil {
		return nil, err
	}
	// The kubelet requires a client certificate; so does the stub, which proves the requests
	// came through the API server's kubelet client identity and not from anywhere else.
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12}
	return start(ns, make([]int, count), "/configz", "application/json", tlsConfig, body)
}

// IPAMDMetricsPort is where aws-node's ipamd serves /metrics (containerPort "metrics" of the
// upstream manifest, config/master/aws-k8s-cni.yaml in amazon-vpc-cni-k8s).
const IPAMDMetricsPort = 61678

// StartIPAMD opens one endpoint per port in ns (0: a port chosen by the kernel) serving ipamd's
// /metrics as aws-node does: plain HTTP, the Prometheus text format, no client authentication.
// The API server reaches it through the pod proxy (pods/NAME:PORT/proxy/metrics): aws-node is
// hostNetwork, so its pod IP is the node's, here the namespace's address.
func StartIPAMD(ns *Netns, ports []int, body func(i int) []byte) (*Server, error) {
	return start(ns, ports, "/metrics", "text/plain; version=0.0.4; charset=utf-8", nil, body)
}

func start(ns *Netns, ports []int, path, contentType string, tlsConfig *tls.Config, body func(i int) []byte) (*Server, error) {
	ls, err := ns.ListenPorts(ports)
	if err != nil {
		return nil, err
	}
	s := &Server{ns: ns, byPort: map[int]*Endpoint{}, path: path, contentType: contentType}
	for i, l := range ls {
		e := &Endpoint{Port: l.Addr().(*net.TCPAddr).Port, body: body(i), status: http.StatusOK, clients: map[string]int{}}
		s.endpoints = append(s.endpoints, e)
		s.byPort[e.Port] = e
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         tlsConfig,
		// Handshake failures are expected in tests (clients without certificates).
		ErrorLog: log.New(io.Discard, "", 0),
	}
	for _, l := range ls {
		if tlsConfig != nil {
			l = tls.NewListener(l, tlsConfig)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.srv.Serve(l)
		}()
	}
	return s, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, _ := addr.(*net.TCPAddr)
	var e *Endpoint
	if tcp != nil {
		e = s.byPort[tcp.Port]
	}
	if e == nil || r.URL.Path != s.path {
		s.other.Add(1)
		http.NotFound(w, r)
		return
	}
	e.hits.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	e.mu.Lock()
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		e.clients[r.TLS.PeerCertificates[0].Subject.CommonName]++
	}
	body, status := e.body, e.status
	e.mu.Unlock()
	if status != http.StatusOK {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", s.contentType)
	_, _ = w.Write(body)
}

// Endpoints returns the endpoints in creation order.
func (s *Server) Endpoints() []*Endpoint { return s.endpoints }

// TotalHits sums the requests for the served path over every endpoint.
func (s *Server) TotalHits() int64 {
	var n int64
	for _, e := range s.endpoints {
		n += e.Hits()
	}
	return n
}

// MaxInFlight is the most requests for the served path that were being answered at once: a
// client's concurrency bound can be checked against it (an upper bound, whatever the machine's
// speed).
func (s *Server) MaxInFlight() int64 { return s.maxInFlight.Load() }

// OtherRequests counts requests for anything but the served path.
func (s *Server) OtherRequests() int64 { return s.other.Load() }

// Close stops serving and closes every listener.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.srv.Close()
		s.wg.Wait()
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	})
	return err
}

func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "kubeletstub"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubeletstub: certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
