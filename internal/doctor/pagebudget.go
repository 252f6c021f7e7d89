package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// MaxPageBytes bounds one LIST answer of pods or events as it comes off the wire. Neither kind
// has a size limit of its own below etcd's request limit (about 1.5 MiB per object): an Event's
// message is free text anyone who may create Events can write, and a pod's spec can carry
// megabytes of environment. A page is decoded whole, so its size bounds memory. Bounding the
// page by objects did that at the cost of one request per few dozen pods: 3,125 requests for
// 100,000 pods in pages of 32, where pods of a few KiB fit 500 to a page in a few MiB. So pods
// and events are asked for in pages of --chunk-size objects (500), and a page whose answer is
// larger than MaxPageBytes is dropped unread past the bound and asked for again, same continue
// token, at half the size (down to one object, which always fits). The next page starts at
// that smaller size and doubles back while answers fit.
const MaxPageBytes = 16 << 20

// errPageTooLarge ends the read of an answer past its budget.
var errPageTooLarge = errors.New("LIST answer over its byte budget")

type pageBudgetKey struct{}

// withPageBudget marks the requests made with ctx: their answers are read to at most max bytes
// by a transport budgetTransport wraps. client-go logs a body read that fails through ctx's
// logger, as an unexpected error; here it is expected and handled, so that logger discards.
func withPageBudget(ctx context.Context, max int64) context.Context {
	return klog.NewContext(context.WithValue(ctx, pageBudgetKey{}, max), logr.Discard())
}

// budgetTransport wraps a transport: the answer to a request whose context carries a page budget
// (withPageBudget) fails with errPageTooLarge once it is longer than the budget.
func budgetTransport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if max, ok := req.Context().Value(pageBudgetKey{}).(int64); ok && err == nil && resp.Body != nil {
			resp.Body = &budgetBody{ReadCloser: resp.Body, left: max}
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// budgetBody reads at most left bytes of an answer, then errPageTooLarge if there is more.
type budgetBody struct {
	io.ReadCloser
	left int64
}

func (b *budgetBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, errPageTooLarge
		} else {
			return 0, err
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// listBudgeted reads every object opts selects as kube.List does, in pages of at most opts.Limit
// objects (kube.DefaultChunkSize when unset) and at most budget bytes of answer each (see
// MaxPageBytes), handing each page to page before the next is requested; it returns the pages
// read (budget 0: MaxPageBytes). The budget holds on the clients DepsFrom builds; a client without budgetTransport
// (a fake clientset) reads each page whole.
func listBudgeted[L kube.ObjectList](ctx context.Context, what string, opts metav1.ListOptions, budget int64,
	list func(context.Context, metav1.ListOptions) (L, error), page func(L) error) (int64, error) {
	full := opts.Limit
	if full <= 0 {
		full = kube.DefaultChunkSize
	}
	if budget <= 0 { // Options without their defaults (a caller of Gather that skipped WithDefaults)
		budget = MaxPageBytes
	}
	limit, pages := full, int64(0)
	_, err := kube.Pages(withPageBudget(ctx, budget), what, opts, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		for {
			o.Limit = limit
			l, err := list(ctx, o)
			switch {
			case errors.Is(err, errPageTooLarge) && limit > 1:
				limit /= 2
				continue
			case errors.Is(err, errPageTooLarge):
				return "", fmt.Errorf("one object is larger than %d bytes", budget)
			case err != nil:
				return "", err
			}
			limit = min(2*limit, full)
			pages++
			// What nodekeeper never reads, as kube.List drops it.
			if err := apimeta.EachListItem(l, func(obj runtime.Object) error {
				if m, err := apimeta.Accessor(obj); err == nil {
					m.SetManagedFields(nil)
				}
				return nil
			}); err != nil {
				return "", err
			}
			return l.GetContinue(), page(l)
		}
	})
	return pages, err
}
