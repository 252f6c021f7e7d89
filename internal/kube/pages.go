package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultChunkSize is the LIST page size, the same default as kubectl's --chunk-size.
const DefaultChunkSize int64 = 500

// ErrListExpired marks a paginated LIST whose continue token expired: the listing took longer
// than the API server keeps the snapshot it started from (etcd compacts every five minutes by
// default). The error also matches apierrors.IsResourceExpired.
var ErrListExpired = errors.New("the paginated LIST took longer than the API server keeps its snapshot")

// Page lists one page with opts (Limit and Continue set) and returns the page's continue token
// ("" on the last page). It handles the page's items before it returns, so that each page can be
// released before the next one is requested.
type Page func(ctx context.Context, opts metav1.ListOptions) (continueToken string, err error)

// Pages is nodekeeper's one pagination policy. It runs one paginated LIST with opts (Limit
// defaults to DefaultChunkSize) and returns how many pages it read.
//
// When the continue token of a later page has expired (410 Gone, reason Expired), Pages fails
// with an error that wraps both ErrListExpired and the API server's error, and says what to do:
// run again, or raise --chunk-size so that fewer pages are needed. what names the resource in
// errors ("leases in kube-node-lease").
//
// client-go's tools/pager does two different things here. Its List (and ListWithAlloc), which
// gathers every page into one list, retries an expiry on page 2 or later as one unpaginated LIST
// when FullListIfExpired is set, as pager.New sets it: one response then holds the whole
// collection, which paging was there to avoid. Its EachListItem has no such fallback and returns
// the Expired error as it is, but fetches pages in a goroutine ahead of the caller, up to
// PageBufferSize (10) of them held at once. Pages fetches a page only after the previous one was
// handled, so one page is in memory at a time, and names the expiry (ErrListExpired).
func Pages(ctx context.Context, what string, opts metav1.ListOptions, page Page) (int, error) {
	if opts.Limit <= 0 {
		opts.Limit = DefaultChunkSize
	}
	for n := 1; ; n++ {
		next, err := page(ctx, opts)
		switch {
		case err != nil && opts.Continue != "" && apierrors.IsResourceExpired(err):
			return n - 1, fmt.Errorf("listing %s: page %d: %w (%w); run again, or raise --chunk-size so that fewer pages are needed",
				what, n, ErrListExpired, err)
		case err != nil:
			return n - 1, fmt.Errorf("listing %s: %w", what, err)
		case next == "":
			return n, nil
		}
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("listing %s: %w", what, err)
		}
		opts.Continue = next
	}
}
