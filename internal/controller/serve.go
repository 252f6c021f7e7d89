package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// MetricsHandler serves the controller's own registry in the Prometheus format.
func (c *Controller) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.registry, promhttp.HandlerOpts{Registry: c.metrics.registry}))
	return mux
}

// ProbeHandler serves /healthz (liveness: fails when this replica leads but has not renewed its
// leader lease in time, which the leader-election watchdog detects) and /readyz (readiness:
// the caches have synced).
func (c *Controller) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if c.watch != nil {
			if err := c.watch.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.Synced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Timeouts of the metrics and probe servers. A scrape or a probe is one small request: a client
// that sends its headers slowly, never finishes its body, cannot take its response or keeps an
// idle keep-alive connection is cut off rather than holding a connection (and a goroutine) for
// ever. The idle timeout is well above the usual scrape intervals (15 s to 60 s), so Prometheus
// keeps reusing its connection.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 90 * time.Second
	// maxHeaderBytes bounds a request's headers; a bearer token is a few kilobytes.
	maxHeaderBytes = 64 << 10
)

// ServeOptions configure a server started by ServeWith. Zero durations mean the defaults above.
type ServeOptions struct {
	// TLS, when set, serves HTTPS with this configuration (it must hold a certificate, or
	// GetCertificate).
	TLS                                                       *tls.Config
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

func (o ServeOptions) server(h http.Handler) *http.Server {
	orDefault := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         o.TLS,
		ReadHeaderTimeout: orDefault(o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(o.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(o.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// Serve listens on addr and serves h over plain HTTP with the default timeouts until ctx ends.
// See ServeWith.
func Serve(ctx context.Context, name, addr string, h http.Handler) (func() error, error) {
	return ServeWith(ctx, name, addr, h, ServeOptions{})
}

// ServeWith listens on addr and serves h until ctx ends. addr "0" (or "") disables the server.
// The listener is bound before ServeWith returns, so a taken port fails at once. The returned
// function stops the server and returns its error.
func ServeWith(ctx context.Context, name, addr string, h http.Handler, opts ServeOptions) (func() error, error) {
	if addr == "" || addr == "0" {
		return func() error { return nil }, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	srv := opts.server(h)
	scheme := "http"
	if opts.TLS != nil {
		scheme = "https"
	}
	errc := make(chan error, 1)
	go func() {
		var err error
		if opts.TLS != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	klog.FromContext(ctx).Info("Serving", "server", name, "address", ln.Addr().String(), "scheme", scheme)
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return func() error {
		stop()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return <-errc
	}, nil
}
