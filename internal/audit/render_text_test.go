package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// hostile is what anyone who can send a request controls in an audit event: its user agent, a
// name it creates, and (through a crafted certificate or a webhook authenticator) its user
// name. Each carries something a terminal acts on.
// hostileString is a string an event's author could write, named for its subtest.
type hostileString struct{ name, s string }

// inLog is the string as a test puts it into an event's fields: invalid UTF-8 as a placeholder
// that hostileEvent turns back into the raw bytes once the event is JSON.
func (h hostileString) inLog() string {
	if h.name == "invalid utf-8" {
		return "INVALIDUTF8"
	}
	return h.s
}

// shown is how a report shows s, a string built from inLog: escaped, with the log's invalid
// bytes read as encoding/json reads them, one U+FFFD each.
func shown(s string) string {
	return textsafe.Escape(strings.ReplaceAll(s, "INVALIDUTF8", "\uFFFD\uFFFD"))
}

var hostile = []hostileString{
	{"osc title", "\x1b]0;owned\x07"},
	{"csi clear", "\x1b[2J\x1b[H"},
	{"c1 csi", "\u009b31m"},
	{"bidi override", "\u202egnp.exe"},
	{"del and bell", "\x7f\x07"},
	{"invalid utf-8", "\xff\xfe"},
	{"newline and tab", "a\nb\tc"},
}

// base is the time test events are placed from.
var base = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

// hostileEvent writes one audit event as the API server would log it (encoding/json escapes the
// control characters), with invalid UTF-8 bytes put back raw, as a broken producer would.
func hostileEvent(t *testing.T, at time.Duration, fields map[string]any) string {
	t.Helper()
	e := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": "ResponseComplete",
		"auditID": "id-" + at.String(), "requestURI": "/x",
		"requestReceivedTimestamp": base.Add(at).Format(time.RFC3339Nano),
		"stageTimestamp":           base.Add(at + 3*time.Millisecond).Format(time.RFC3339Nano)}
	for k, v := range fields {
		e[k] = v
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "INVALIDUTF8", "\xff\xfe")
}

// unsafeForTerminal returns the first character of out a terminal could act on, if any.
func unsafeForTerminal(out []byte) (string, bool) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return string(out[i : i+1]), true
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return string(r), true
		}
		i += size
	}
	return "", false
}

// safeText renders r as text and fails the test unless nothing in it reaches the terminal as
// anything but text.
func safeText(t *testing.T, r *analyze.Report) string {
	t.Helper()
	var out bytes.Buffer
	if err := render.WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	if c, bad := unsafeForTerminal(out.Bytes()); bad {
		t.Fatalf("the text report carries %q to the terminal:\n%s", c, out.String())
	}
	return out.String()
}

// Every string an event's author controls reaches the text report escaped: the node and lease
// names, the user, user agent, source IP and instance identity, in every section that shows
// them (deletions, leaks, zombies, lifecycles, throttling, talkers, access denied, inputs).
func TestTextReportEscapesHostileStrings(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			s := h.inLog()
			node := "ip-" + s
			user := "admin" + s
			ua := "kubectl" + s
			kubelet := "system:node:" + node
			userInfo := map[string]any{"username": user, "groups": []string{"system:authenticated" + s},
				"extra": map[string]any{"sessionName": []string{"i-" + s}}}
			nodeRef := map[string]any{"resource": "nodes", "name": node, "apiVersion": "v1"}
			leaseRef := func(ns string) map[string]any {
				return map[string]any{"resource": "leases", "namespace": ns, "name": node,
					"apiGroup": "coordination.k8s.io", "apiVersion": "v1"}
			}
			code := func(c int) map[string]any { return map[string]any{"code": c} }
			lines := []string{
				hostileEvent(t, 0, map[string]any{"verb": "delete", "user": userInfo, "sourceIPs": []string{"10.0.0.1" + s},
					"userAgent": ua, "objectRef": nodeRef, "responseStatus": code(200)}),
			}
			for i := 1; i <= 20; i++ {
				lines = append(lines, hostileEvent(t, time.Duration(i)*10*time.Second, map[string]any{"verb": "get",
					"user": map[string]any{"username": kubelet}, "sourceIPs": []string{"10.0.0.2" + s}, "userAgent": "kubelet/v1.28.3" + s,
					"objectRef": leaseRef(analyze.NodeLeaseNamespace), "responseStatus": code(404)}))
			}
			lines = append(lines,
				hostileEvent(t, 205*time.Second, map[string]any{"verb": "create", "user": map[string]any{"username": kubelet},
					"userAgent": "kubelet/v1.28.3" + s, "objectRef": leaseRef(analyze.NodeLeaseNamespace), "responseStatus": code(201)}),
				hostileEvent(t, 206*time.Second, map[string]any{"verb": "create", "user": userInfo, "userAgent": ua,
					"objectRef": leaseRef("ns" + s), "responseStatus": code(201)}),
				hostileEvent(t, 207*time.Second, map[string]any{"verb": "delete", "user": userInfo, "userAgent": ua,
					"objectRef": leaseRef("ns" + s), "responseStatus": code(200)}),
				hostileEvent(t, 208*time.Second, map[string]any{"verb": "list", "user": userInfo, "userAgent": ua,
					"objectRef": map[string]any{"resource": "pods" + s}, "responseStatus": code(429),
					"annotations": map[string]any{"apiserver.latency.k8s.io/apf-queue-wait": "1.5s"}}),
				hostileEvent(t, 209*time.Second, map[string]any{"verb": "get", "user": userInfo, "userAgent": ua,
					"objectRef": map[string]any{"resource": "secrets", "namespace": "ns" + s, "name": "n" + s}, "responseStatus": code(403)}),
				"not json "+s,
			)
			r, err := analyze.AnalyzeReader("input"+s, strings.NewReader(strings.Join(lines, "\n")), analyze.Options{User: ""})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.NodeDeletions) != 1 || len(r.Zombies) != 1 || len(r.Leaks) != 1 || len(r.Leases) != 2 {
				t.Fatalf("the hostile events did not reach every section: %d deletions, %d zombies, %d leaks, %d leases",
					len(r.NodeDeletions), len(r.Zombies), len(r.Leaks), len(r.Leases))
			}
			text := safeText(t, r)
			// The strings are shown escaped, on one line each, not dropped.
			for _, want := range []string{user, ua, node} {
				if !strings.Contains(text, shown(want)) {
					t.Errorf("%q is not shown escaped:\n%s", shown(want), text)
				}
			}
		})
	}
}
