package kube

import (
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// CountRequests returns a copy of cfg whose clients count every request they send, and the
// function that reads the count (doctor's apiRequests statistic).
func CountRequests(cfg *rest.Config) (*rest.Config, func() int64) {
	n := new(atomic.Int64)
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, n: n} })
	return c, n.Load
}

// countingTransport counts every request the client sends.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}
