package controlplane

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// A node route answers the API server's connections to one node address (a simulated kubelet's
// InternalIP and port) inside this process: the egress guard hands the CONNECTed stream to an
// in-process HTTPS server instead of dialling. Nothing is sent to the address, so simulated nodes
// keep their realistic EKS addresses (10.x.y.z) and still serve the node proxy
// (/api/v1/nodes/NAME/proxy/configz) without a network namespace, root or a socket of their own.
// A route marked down answers like a machine that is gone: the CONNECT fails with 502, as the
// guard answers a dial that fails.
type nodeRoutes struct {
	mu     sync.Mutex
	routes map[netip.AddrPort]*nodeRoute
	cert   *tls.Certificate
}

type nodeRoute struct {
	srv  *http.Server
	ln   *connListener
	down bool
}

// ServeNode makes h answer, over TLS as a kubelet does, every connection the API server opens to
// addr (a Node's InternalIP and kubelet port) through its egress. The kubelet requires a client
// certificate; so does the route, which sees the API server's kubelet client identity. Calling it
// again for addr replaces the handler.
func (e *Env) ServeNode(addr netip.AddrPort, h http.Handler) error {
	return e.egress.routes.serve(addr, h)
}

// NodeDown makes addr answer like a machine that stopped: connections fail (the guard's 502)
// until ServeNode is called for it again.
func (e *Env) NodeDown(addr netip.AddrPort) { e.egress.routes.setDown(addr) }

func (r *nodeRoutes) serve(addr netip.AddrPort, h http.Handler) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert == nil {
		cert, err := nodeServingCert()
		if err != nil {
			return err
		}
		r.cert = cert
	}
	if old := r.routes[addr]; old != nil {
		old.srv.Close()
	}
	if r.routes == nil {
		r.routes = map[netip.AddrPort]*nodeRoute{}
	}
	ln := newConnListener(addr)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{*r.cert}, ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12},
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	r.routes[addr] = &nodeRoute{srv: srv, ln: ln}
	return nil
}

func (r *nodeRoutes) setDown(addr netip.AddrPort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.routes[addr]; rt != nil {
		rt.down = true
	}
}

// lookup returns the route of target ("ip:port"), and whether one is registered at all.
func (r *nodeRoutes) lookup(target string) (*nodeRoute, bool) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.routes[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())]
	return rt, ok
}

func (r *nodeRoutes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.routes {
		rt.srv.Close()
	}
	r.routes = nil
}

// connListener is a net.Listener whose connections are handed to it (by the egress guard).
type connListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnListener(addr netip.AddrPort) *connListener {
	return &connListener{addr: net.TCPAddrFromAddrPort(addr), conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// hand gives c to the server; false when the listener is closed.
func (l *connListener) hand(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// bufferedConn reads first what the guard's reader already buffered after the CONNECT request.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// nodeServingCert is the routes' TLS certificate. The API server does not verify kubelet serving
// certificates here (it runs without --kubelet-certificate-authority, like a cluster whose
// kubelets serve self-signed certificates), so one self-signed certificate serves every route.
func nodeServingCert() (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "simulated-kubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("node route certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
