package kube

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
)

// defaultServer is where client-go sends requests when no kubeconfig, $KUBECONFIG or --server
// names a cluster (clientcmd's fallback: "no configuration has been provided", then this).
const defaultServer = "http://localhost:8080"

// NoClusterError says that no API server answered at host: the TCP connection (or the name
// lookup before it) failed, so nothing about the request itself is known. Its text is the
// whole story for a person, said once: which server, why, and how to point at another one;
// Headline lets cli.Execute print it instead of the chain of wrappers above it ("read the
// aws-node DaemonSet: Get \"http://localhost:8080/...\": ...").
type NoClusterError struct {
	// Host is the API server's URL from the rest config.
	Host string
	// Err is the dial error.
	Err error
}

func (e *NoClusterError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no cluster answered at %s (%s)", e.Host, dialReason(e.Err))
	if strings.TrimSuffix(e.Host, "/") == defaultServer {
		b.WriteString("; no kubeconfig names a cluster, so client-go tried its default")
	}
	b.WriteString(": point nodekeeper at one with --kubeconfig FILE (or $KUBECONFIG), --context NAME or --server URL")
	return b.String()
}

// Headline is the line cli.Execute prints in place of the wrapped error chain.
func (e *NoClusterError) Headline() string { return e.Error() }

func (e *NoClusterError) Unwrap() error { return e.Err }

// dialReason is the last, informative part of a dial error ("connection refused", "no such
// host"), without the addresses client-go repeats around it.
func dialReason(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "no such host " + dns.Name
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// noClusterTransport turns a failure to connect to the API server into a NoClusterError. Only
// dialling counts: once a connection is made, the cluster answered, and TLS, authentication and
// HTTP errors keep their own text.
type noClusterTransport struct {
	host string
	next http.RoundTripper
}

func (t *noClusterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	var said *NoClusterError
	if err != nil && !errors.As(err, &said) && isDialError(err) { // a config configured twice wraps twice
		return nil, &NoClusterError{Host: t.host, Err: err}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's debugging wrappers see through this one.
func (t *noClusterTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// explainUnreachable makes cfg's requests fail with a NoClusterError when the API server cannot
// be reached.
func explainUnreachable(cfg *rest.Config) {
	host := cfg.Host
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &noClusterTransport{host: host, next: rt} })
}
