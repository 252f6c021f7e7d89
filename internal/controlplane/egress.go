package controlplane

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// DefaultEgressAllowed is where the API server may open connections to "nodes": 198.18.0.0/15,
// the range reserved for benchmark networks (RFC 2544), which tests use for the hosts they create
// in their own network namespaces. Simulated nodes carry realistic EKS addresses (10.x.y.z), and
// nothing may ever be sent there from this machine.
var DefaultEgressAllowed = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}

// egressGuard is the API server's only way out to nodes (but for the in-process node routes,
// ServeNode, which it answers itself without dialling): kube-apiserver is configured with an
// EgressSelectorConfiguration whose "cluster" egress goes through this HTTP CONNECT proxy on a
// Unix socket. It dials only allowed IP literals and refuses everything else (other addresses,
// host names that would need DNS) with 403, so node proxy, logs and exec requests against
// simulated nodes can never leave the machine.
type egressGuard struct {
	allowed  []netip.Prefix
	listener net.Listener
	// routes answer simulated nodes' addresses in process (ServeNode); they are checked first.
	routes nodeRoutes

	mu      sync.Mutex
	refused []string
	wg      sync.WaitGroup
}

func startEgressGuard(socket string, allowed []netip.Prefix) (*egressGuard, error) {
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("egress guard: %w", err)
	}
	g := &egressGuard{allowed: allowed, listener: l}
	g.wg.Add(1)
	go g.serve()
	return g, nil
}

func (g *egressGuard) serve() {
	defer g.wg.Done()
	for {
		conn, err := g.listener.Accept()
		if err != nil {
			return
		}
		go g.handle(conn)
	}
}

func (g *egressGuard) permitted(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false // a name would need a DNS lookup: never
	}
	for _, p := range g.allowed {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

func (g *egressGuard) handle(client net.Conn) {
	if !g.serve1(client) {
		client.Close()
	}
}

// serve1 answers one CONNECT; it returns true when a node route took the connection over (its
// server closes it), false when the connection is to be closed now.
func (g *egressGuard) serve1(client net.Conn) bool {
	_ = client.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(client)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		fmt.Fprint(client, "HTTP/1.1 400 Bad Request\r\n\r\n")
		return false
	}
	target := req.Host
	if rt, ok := g.routes.lookup(target); ok {
		if rt.down {
			fmt.Fprint(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			return false
		}
		_ = client.SetDeadline(time.Time{})
		fmt.Fprint(client, "HTTP/1.1 200 Connection established\r\n\r\n")
		return rt.ln.hand(&bufferedConn{Conn: client, r: br})
	}
	if !g.permitted(target) {
		g.mu.Lock()
		g.refused = append(g.refused, target)
		g.mu.Unlock()
		fmt.Fprintf(client, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nX-Testenv-Egress: %s is outside the test hosts' range\r\n\r\n", target)
		return false
	}
	upstream, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		fmt.Fprint(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return false
	}
	defer upstream.Close()
	_ = client.SetDeadline(time.Time{})
	fmt.Fprint(client, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
	<-done
	return false
}

func (g *egressGuard) close() {
	g.listener.Close()
	g.routes.close()
	g.wg.Wait()
}

func (g *egressGuard) refusedTargets() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

func egressSelectorConfig(socket string) string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socket)
}
