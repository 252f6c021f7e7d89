package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// TestPageBudgetHalves: against the real API server, through the clients DepsFrom builds, a page
// of events whose answer is over the byte budget is asked for again smaller, same continue token,
// until it fits: every event is read once, no page holds more than the budget allows, and an
// object larger than the whole budget is a clear error, not a page read whole.
func TestPageBudgetHalves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := env.AdminClient()
	ns := "page-budget"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A reason no other test lists, and gone after this one: the package's tests share the cluster.
	t.Cleanup(func() {
		_ = admin.CoreV1().Events(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	const events, size = 12, 100 << 10
	msg := strings.Repeat("m", size)
	for i := range events {
		if _, err := admin.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"}, Reason: "PageBudgetTest", Message: msg}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clients, err := kube.NewClients(kube.Configure(env.AdminConfig(), "doctor", kube.RateLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	d := DepsFrom(clients, nil)

	// 350 KiB holds three of the events; the first page asks for 500.
	seen := map[string]bool{}
	largest := 0
	pages, err := listBudgeted(ctx, "events", metav1.ListOptions{Limit: 500}, 350<<10, d.Bulk.CoreV1().Events(ns).List, func(l *corev1.EventList) error {
		largest = max(largest, len(l.Items))
		for _, e := range l.Items {
			if seen[e.Name] || len(e.Message) != size {
				t.Errorf("event %s read twice or cut (%d bytes)", e.Name, len(e.Message))
			}
			seen[e.Name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != events || largest > 3 || pages < events/3 {
		t.Errorf("read %d of %d events in %d pages of at most %d, want pages of at most 3", len(seen), events, pages, largest)
	}

	_, err = listBudgeted(ctx, "events", metav1.ListOptions{Limit: 500}, 50<<10, d.Bulk.CoreV1().Events(ns).List, func(*corev1.EventList) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "one object is larger than 51200 bytes") || !strings.Contains(err.Error(), "listing events") {
		t.Errorf("an event larger than the budget: %v", err)
	}
}
