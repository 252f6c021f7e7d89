package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// encoderJSON is what -o json printed before WriteJSON: the whole document through an indenting
// json.Encoder.
func encoderJSON(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Document()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ExpectWriteJSON fails t unless WriteJSON writes exactly the encoder's bytes for r.
func expectWriteJSON(t *testing.T, name string, r *Report) {
	t.Helper()
	var got bytes.Buffer
	if err := r.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	want := encoderJSON(t, r)
	if !bytes.Equal(got.Bytes(), want) {
		g, w := got.String(), string(want)
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("%s: WriteJSON differs from the encoder at byte %d:\n got …%q\nwant …%q", name, i, g[max(0, i-80):min(len(g), i+80)], w[max(0, i-80):min(len(w), i+80)])
	}
}

func TestWriteJSONMatchesEncoder(t *testing.T) {
	at := time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)
	actor := Actor{User: "system:node:n1", UserAgent: "kubelet/v1.27.9 <&>", SourceIP: "10.0.0.1", Identity: "i-0abc"}
	created := Event{Time: at, Action: "create", Code: 201, Actor: actor, OwnersKnown: true, AuditID: "a1", Where: "x.log:line 3"}
	full := &Report{
		From: at, To: at.Add(time.Hour),
		Filters: Filters{Node: "n1", Since: at},
		Inputs:  []read.SourceStats{{Name: "a.log", Format: "json-lines", Bytes: 10, Lines: 2, Events: 1, Bad: []read.BadSummary{{Kind: "malformed", Count: 1, Examples: []read.BadExample{{Line: 2, Reason: "invalid JSON"}}}}}, {Name: "b.log"}},
		Totals:  Totals{Lines: 2, Events: 1},
		NodeDeletions: []NodeDeletion{{Node: "n1", Event: created, LeaseDeleted: &FollowUp{Time: at, After: time.Second, Actor: actor},
			FirstRequest: &at}},
		Leases:        []LeaseLifecycle{{Namespace: "kube-node-lease", Name: "n1", Creates: 1, Events: []Event{created, created}}, {Name: "n2", Events: []Event{}}},
		Leaks:         []Leak{{Namespace: "kube-node-lease", Name: "n1", Cause: CauseNodeMissing, Created: created, NodeDeletion: &created, Status: LeakLeaked}},
		Zombies:       []Zombie{{Node: "n1", Deletion: &created, SourceIPs: []string{"10.0.0.1"}, Calls: []CallCount{{Verb: "get", Resource: "nodes", Code: 404, Count: 3}}}},
		Throttling:    Throttling{ByKey: []Talker{{User: "u"}}, ByUser: []Talker{}},
		TopByRequests: []Talker{{User: "u", UserAgent: "a\u2028b", Requests: 3}, {User: "v"}},
		TopByLatency:  []Talker{},
		Timeline:      Timeline{Start: at, Step: time.Minute, Requests: []int64{1, 2}, ThrottledUsers: []UserSeries{{User: "u", Throttled: []int64{0}}}},
		Bounds:        Bounds{NamesNotKept: 1},
		Errors:        []string{"b.log: gzip stream truncated", "c.log: <denied>"},
	}
	expectWriteJSON(t, "full", full)
	expectWriteJSON(t, "zero", &Report{})
	empty := &Report{Inputs: []read.SourceStats{}, NodeDeletions: []NodeDeletion{}, Leases: []LeaseLifecycle{}, Leaks: []Leak{},
		Zombies: []Zombie{}, TopByRequests: []Talker{}, TopByLatency: []Talker{}, Errors: []string{}}
	expectWriteJSON(t, "empty lists", empty)

	// A report the analysis made (package audit's goldens compare larger ones).
	var log strings.Builder
	for _, e := range []ev{
		{at: 0, verb: "delete", user: "admin", res: "nodes", name: "n1", code: 200},
		{at: 1, verb: "get", user: "system:node:n1", res: "nodes", name: "n1", code: 404},
		{at: 2, verb: "create", user: "system:node:n1", res: "leases", name: "n1", code: 201},
		{at: 200, verb: "get", user: "system:node:n1", res: "nodes", name: "n1", code: 404},
	} {
		log.WriteString(e.line() + "\n")
	}
	r, err := AnalyzeReader("small.log", strings.NewReader(log.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NodeDeletions) == 0 || len(r.Leases) == 0 {
		t.Fatalf("the small log should give a node deletion and a lease: %+v", r)
	}
	expectWriteJSON(t, "analysed", r)
}

// TestWriteJSONFields keeps jsonFields in step with the document's struct tags: a member added
// to the Report must be written by WriteJSON too, in the same place.
func TestWriteJSONFields(t *testing.T) {
	var want []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			if f.Anonymous {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				walk(ft)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			want = append(want, name)
		}
	}
	walk(reflect.TypeOf(reportDocument{}))
	var got []string
	for _, f := range (&Report{}).jsonFields() {
		got = append(got, f.key)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("WriteJSON writes the members\n%v\nthe document has\n%v", got, want)
	}
}

// A writer that fails makes WriteJSON fail with its error.
func TestWriteJSONWriteError(t *testing.T) {
	boom := errors.New("disk full")
	r := &Report{Leases: make([]LeaseLifecycle, 20000)}
	if err := r.WriteJSON(failingWriter{boom}); !errors.Is(err, boom) {
		t.Errorf("WriteJSON to a failing writer: %v, want %v", err, boom)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }
