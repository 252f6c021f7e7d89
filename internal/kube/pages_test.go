package kube

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	// With ListFromCacheSnapshot (on by default since 1.34) the API server serves the pages of a
	// LIST from snapshots of its watch cache, which it drops on its own compaction schedule; with
	// the gate off every page is read from etcd, so compacting etcd expires a continue token at
	// once, as the API server's compaction does in a cluster when a LIST outlives the window.
	testenv.Main(m, testenv.Options{APIServerArgs: []string{"--feature-gates=ListFromCacheSnapshot=false"}, AuditPolicy: auditPolicy}, &env)
}

// seedLeases creates n leases in a new namespace named ns and returns the clients.
func seedLeases(t *testing.T, ns string, n int) *Clients {
	t.Helper()
	ctx := context.Background()
	c, err := NewClients(Configure(env.AdminConfig(), "test", RateLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	// A second pass (-count=2) against the same control plane finds the namespace of the first:
	// reuse it, emptied, so each pass sees exactly its n leases.
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Kube.CoordinationV1().Leases(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l-%03d", i)}}
		if _, err := c.Kube.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestPagesReadsEveryPage: every lease once, in pages of the chunk size, managedFields dropped.
func TestPagesReadsEveryPage(t *testing.T) {
	c := seedLeases(t, "pages-all", 25)
	tests := []struct {
		chunk     int64
		wantPages int
	}{{chunk: 10, wantPages: 3}, {chunk: 25, wantPages: 1}, {chunk: 0, wantPages: 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.chunk), func(t *testing.T) {
			seen := map[string]int{}
			pages := 0
			err := ListLeases(context.Background(), c.Kube.CoordinationV1(), "pages-all", tt.chunk, func(l *coordinationv1.LeaseList) error {
				pages++
				if tt.chunk > 0 && int64(len(l.Items)) > tt.chunk {
					t.Errorf("page of %d items, chunk %d", len(l.Items), tt.chunk)
				}
				for _, it := range l.Items {
					seen[it.Name]++
					if it.ManagedFields != nil {
						t.Errorf("lease %s kept its managedFields", it.Name)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 25 || pages != tt.wantPages {
				t.Fatalf("read %d distinct leases in %d pages, want 25 in %d", len(seen), pages, tt.wantPages)
			}
			for name, n := range seen {
				if n != 1 {
					t.Errorf("lease %s read %d times", name, n)
				}
			}
		})
	}
}

// TestPagesExpiredContinueToken provokes the API server's 410 Expired on a real continue token by
// compacting etcd between two pages, as the API server's own compaction does to a LIST that takes
// longer than its window, and shows the documented policy: the listing fails with ErrListExpired
// and a message saying what to do, after the pages it read, and never re-lists from the start.
func TestPagesExpiredContinueToken(t *testing.T) {
	c := seedLeases(t, "pages-expired", 30)
	ctx := context.Background()
	leases := c.Kube.CoordinationV1().Leases("pages-expired")
	var requests []metav1.ListOptions
	pages, err := Pages(ctx, "leases in pages-expired", metav1.ListOptions{Limit: 10}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		requests = append(requests, o)
		list, err := leases.List(ctx, o)
		if err != nil {
			return "", err
		}
		if len(requests) == 1 {
			// Everything the first page's continue token points into is history now.
			touch(t, c.Kube, "pages-expired")
			if _, err := env.CompactEtcd(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return list.Continue, nil
	})
	if err == nil {
		t.Fatalf("listing succeeded after compaction (%d pages); the API server served the expired token", pages)
	}
	if !errors.Is(err, ErrListExpired) || !apierrors.IsResourceExpired(err) {
		t.Fatalf("error %v: want ErrListExpired wrapping the API server's 410 Expired", err)
	}
	for _, want := range []string{"leases in pages-expired", "page 2", "--chunk-size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if pages != 1 || len(requests) != 2 || requests[1].Continue == "" {
		t.Fatalf("read %d pages in %d requests; want the first page, then one failed request with its continue token and no fallback", pages, len(requests))
	}
}

// touch writes one object so that etcd's revision moves past the one the continue token pins.
func touch(t *testing.T, c Interface, ns string) {
	t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "touch"}}
	if _, err := c.CoordinationV1().Leases(ns).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
