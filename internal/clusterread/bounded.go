package clusterread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// ReadBounded sends r once (no retries) and reads at most limit bytes of the answer, refusing a
// larger one where DoRaw would hold all of it in memory. Non-2xx answers become errors as with
// DoRaw. what names the answer in that refusal. Every raw read of the package (configz, /metrics)
// and of its callers through the API server's proxies (ipamd's metrics) goes through here.
func ReadBounded(ctx context.Context, r *rest.Request, limit int64, what string) ([]byte, error) {
	body, err := r.MaxRetries(0).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", what, limit)
	}
	return raw, nil
}

// maxConfigzBytes bounds one /configz answer. A kubelet's is a few KiB; whatever answers on the
// node-proxy path in its place is not trusted to stay small, and thousands are read at once.
const maxConfigzBytes = 1 << 20

// ReadConfigz reads node's kubelet configuration through the API server's node proxy, once (no
// retries), at most maxConfigzBytes of it.
func ReadConfigz(ctx context.Context, client rest.Interface, node string) ([]byte, error) {
	return ReadBounded(ctx, client.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz"), maxConfigzBytes, "the /configz answer (a kubelet's is a few KiB)")
}

// ProxyFailure is the one-line reason a request through the API server's node or pod proxy
// failed, with the HTTP status when there is one. The error can quote whatever answered on the
// path to the kubelet or pod (a proxy's HTML page, a message in any language), so it is clipped
// to 200 characters on a character boundary and kept as written (the printers escape it).
func ProxyFailure(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		msg = fmt.Sprintf("HTTP %d: %s", st.Status().Code, msg)
	}
	return textsafe.ClipRaw(msg, 200)
}

// ConfigzResult is one node's kubelet configuration, or why it could not be read.
type ConfigzResult struct {
	Config *rules.KubeletConfig
	Err    string // "" when Config is set
}

// Configz reads and parses one node's kubelet configuration within timeout (0: ctx's own).
func (r Reader) Configz(ctx context.Context, node string, timeout time.Duration) ConfigzResult {
	if ctx.Err() != nil {
		return ConfigzResult{Err: ctx.Err().Error()}
	}
	if r.REST == nil {
		return ConfigzResult{Err: "no client for the node proxy"}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	raw, err := ReadConfigz(ctx, r.REST, node)
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "nodes/proxy"):
		// RBAC's denial names the resource; other 403s come from the path to the kubelet.
		return ConfigzResult{Err: "forbidden: " + Needs("get", "nodes/proxy", "")}
	case err != nil:
		return ConfigzResult{Err: ProxyFailure(err)}
	}
	c, err := rules.ParseConfigz(raw)
	if err != nil {
		return ConfigzResult{Err: err.Error()}
	}
	return ConfigzResult{Config: &c}
}

// ConfigzOptions bound the configz fan-out.
type ConfigzOptions struct {
	// Workers bounds the requests in flight; Timeout each one.
	Workers int
	Timeout time.Duration
	// Progress is EachBounded's progress.
	Progress func(done, total int)
}

// ConfigzStats count the configz fan-out's requests and failures.
type ConfigzStats struct {
	Requests, Errors int64
}

// ConfigzAll reads every Ready node's kubelet configuration through the node proxy: one request
// per node, no retries, at most o.Workers in flight. Nodes not Ready carry "node not Ready". When
// the caller may not get nodes/proxy (a SelfSubjectAccessReview says so before thousands of
// requests are refused one by one) the whole read is a *Missing.
func (r Reader) ConfigzAll(ctx context.Context, nodes []corev1.Node, o ConfigzOptions) (map[string]ConfigzResult, ConfigzStats, error) {
	out := make(map[string]ConfigzResult, len(nodes))
	var st ConfigzStats
	if len(nodes) == 0 {
		return out, st, nil
	}
	if r.REST == nil {
		return out, st, &Missing{Resource: "nodes/proxy", Reason: "no client for the node proxy"}
	}
	allowed, reason, err := r.CanI(ctx, authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"})
	if err != nil {
		klog.ErrorS(err, "SelfSubjectAccessReview for nodes/proxy failed; trying the requests")
		allowed = true
	}
	if !allowed {
		return out, st, &Missing{Resource: "nodes/proxy", Reason: Needs("get", "nodes/proxy", "") + " (" + reason + ")"}
	}
	var ready []string
	for i := range nodes {
		if n := &nodes[i]; NodeReady(n) {
			ready = append(ready, n.Name)
		} else {
			out[n.Name] = ConfigzResult{Err: "node not Ready"}
		}
	}
	var errs, requests atomic.Int64
	results := make([]ConfigzResult, len(ready))
	EachBounded(ctx, max(o.Workers, 1), len(ready), o.Progress, func(i int) {
		if ctx.Err() == nil {
			requests.Add(1)
		}
		results[i] = r.Configz(ctx, ready[i], o.Timeout)
		if results[i].Err != "" {
			errs.Add(1)
		}
	})
	for i, name := range ready {
		if results[i].Config == nil && results[i].Err == "" {
			// Not started: the run was interrupted.
			results[i].Err = "not read: " + context.Cause(ctx).Error()
			errs.Add(1)
		}
		out[name] = results[i]
	}
	st.Requests, st.Errors = requests.Load(), errs.Load()
	return out, st, nil
}
