package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// printingSink prints as `leases --watch -o json` does and passes the snapshot and the changes
// on to the test.
type printingSink struct {
	*leasesview.WatchPrinter
	snapshots chan leasesview.Report
	changes   chan leasesview.Change
}

func (s *printingSink) Snapshot(r *leasesview.Report) error {
	if err := s.WatchPrinter.Snapshot(r); err != nil {
		return err
	}
	s.snapshots <- *r
	return nil
}

func (s *printingSink) Change(c *leasesview.Change) error {
	if err := s.WatchPrinter.Change(c); err != nil {
		return err
	}
	s.changes <- *c
	return nil
}

// TestWatchJSONMatchesSchemas runs the real watch against the API server while a Node is deleted
// under its kubelet, and validates what `leases --watch -o json` prints: the snapshot against
// the LeaseReport schema, then every change against the LeaseChange schema.
func TestWatchJSONMatchesSchemas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const node = "ip-10-41-0-1.ec2.internal"
	fleet := env.NewFleet(t)
	if _, err := fleet.Start(ctx, kubeletsim.Config{Name: node, LeaseDurationSeconds: 8}); err != nil {
		t.Fatal(err)
	}
	c := clientsFor(t, env.AdminConfig())
	opts := leasesview.Options{Namespace: lease.NodeLeaseNamespace}
	waitForClass(ctx, t, c, opts, map[string]lease.Class{"kube-node-lease/" + node: lease.Healthy}, time.Minute)

	var out bytes.Buffer // written by the watch goroutine, read once Watch has returned
	sink := &printingSink{WatchPrinter: leasesview.NewWatchPrinter(&out, leasesview.PrintOptions{Format: leasesview.FormatJSON}),
		snapshots: make(chan leasesview.Report, 1), changes: make(chan leasesview.Change, 1000)}
	wctx, stop := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- leasesview.Watch(wctx, c, opts, sink) }()

	// The Node goes only once the watch has its snapshot with the healthy lease: deleted earlier,
	// under load the garbage collector can remove the lease before the watch first lists, and then
	// nothing is left to change.
	select {
	case r := <-sink.snapshots:
		if it, ok := itemsByName(&r)["kube-node-lease/"+node]; !ok || it.Class != lease.Healthy {
			t.Fatalf("snapshot has %s as %q, want %s", node, it.Class, lease.Healthy)
		}
	case err := <-werr:
		t.Fatalf("watch ended before its snapshot: %v", err)
	case <-ctx.Done():
		t.Fatal("no snapshot printed")
	}
	// The Node goes: its lease changes (owner-missing, then deleted by the garbage collector).
	if err := env.AdminClient().CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.changes:
	case <-ctx.Done():
		t.Fatal("no change printed after the Node was deleted")
	}
	stop()
	if err := <-werr; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("watch: %v", err)
	}

	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	var docs []json.RawMessage
	for {
		var d json.RawMessage
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("watch output is not a JSON stream: %v\n%s", err, out.Bytes())
		}
		docs = append(docs, d)
	}
	if len(docs) < 2 {
		t.Fatalf("%d documents, want the snapshot and at least one change:\n%s", len(docs), out.Bytes())
	}
	schematest.Validate(t, "LeaseReport", docs[0])
	for _, d := range docs[1:] {
		schematest.Validate(t, leasesview.ChangeKind, d)
	}
}
