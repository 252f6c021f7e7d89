package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/events"
)

// TestEventNoteClippedOnCharacters: a note over the API's 1 kB limit (a long holder identity in
// any script) is cut to at most 1000 bytes without splitting a character.
func TestEventNoteClippedOnCharacters(t *testing.T) {
	rec := events.NewFakeRecorder(1)
	e := &eventEmitter{recorder: rec, queue: make(chan func(), 1), dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})}
	holder := strings.Repeat("ü", 600) // 1,200 bytes after a 15-byte prefix: byte 1000 falls inside a character
	e.emit(&coordinationv1.Lease{}, "Normal", "Deleted", "Delete", "lease held by x%s", holder)
	(<-e.queue)()
	got := strings.TrimPrefix(<-rec.Events, "Normal Deleted ")
	if !utf8.ValidString(got) {
		t.Errorf("note is not valid UTF-8 (a character was cut): %q", got[len(got)-8:])
	}
	if len(got) > 1000 {
		t.Errorf("note is %d bytes, the API rejects more than 1000", len(got))
	}
	if !strings.HasPrefix(got, "lease held by xüü") {
		t.Errorf("note = %.40q…", got)
	}
}
