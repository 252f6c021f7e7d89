package read

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// refEvent is what the reference parser (encoding/json into maps) extracts from a line: the
// same fields, with the same semantics (last duplicate key wins, null is absent).
type refEvent struct {
	Kind, APIVersion, Level, AuditID, Stage, RequestURI, Verb string
	User, Imp                                                 refUser
	SourceIP, UserAgent                                       string
	Obj                                                       [7]string // resource, namespace, name, uid, apiGroup, apiVersion, subresource
	HasObj                                                    bool
	Code                                                      int64
	ReqObj, RespObj                                           string
	Received, StageTime, Timestamp                            string
	APFWait, Total                                            string
}

type refUser struct{ Username, UID, Session, ARN, Cred string }

var errRefType = errors.New("reference: wrong type")

func refParse(line []byte) (refEvent, error) {
	var ev refEvent
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return ev, err
	}
	if top == nil {
		return ev, errRefType // the line was null
	}
	str := func(m map[string]json.RawMessage, k string) (string, error) {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	obj := func(m map[string]json.RawMessage, k string) (map[string]json.RawMessage, bool, error) {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			return nil, false, nil
		}
		var o map[string]json.RawMessage
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, false, err
		}
		return o, true, nil
	}
	first := func(m map[string]json.RawMessage, k string) (string, error) {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			return "", nil
		}
		var a []*string
		if err := json.Unmarshal(raw, &a); err != nil {
			return "", err
		}
		if len(a) == 0 || a[0] == nil {
			return "", nil
		}
		return *a[0], nil
	}
	var err error
	set := func(dst *string, v string, e error) {
		if e != nil && err == nil {
			err = e
		}
		*dst = v
	}
	for _, f := range []struct {
		k   string
		dst *string
	}{{"kind", &ev.Kind}, {"apiVersion", &ev.APIVersion}, {"level", &ev.Level}, {"auditID", &ev.AuditID},
		{"stage", &ev.Stage}, {"requestURI", &ev.RequestURI}, {"verb", &ev.Verb}, {"userAgent", &ev.UserAgent},
		{"requestReceivedTimestamp", &ev.Received}, {"stageTimestamp", &ev.StageTime}, {"timestamp", &ev.Timestamp}} {
		v, e := str(top, f.k)
		set(f.dst, v, e)
	}
	v, e := first(top, "sourceIPs")
	set(&ev.SourceIP, v, e)
	user := func(k string, u *refUser) {
		m, _, e := obj(top, k)
		if e != nil {
			set(new(string), "", e)
			return
		}
		a, e1 := str(m, "username")
		b, e2 := str(m, "uid")
		set(&u.Username, a, e1)
		set(&u.UID, b, e2)
		x, _, e3 := obj(m, "extra")
		set(new(string), "", e3)
		s1, e4 := first(x, "sessionName")
		s2, e5 := first(x, "arn")
		s3, e6 := first(x, "authentication.kubernetes.io/credential-id")
		set(&u.Session, s1, e4)
		set(&u.ARN, s2, e5)
		set(&u.Cred, s3, e6)
	}
	user("user", &ev.User)
	user("impersonatedUser", &ev.Imp)
	o, has, e := obj(top, "objectRef")
	set(new(string), "", e)
	ev.HasObj = has
	for i, k := range []string{"resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "subresource"} {
		v, e := str(o, k)
		set(&ev.Obj[i], v, e)
	}
	st, _, e := obj(top, "responseStatus")
	set(new(string), "", e)
	if raw, ok := st["code"]; ok && string(raw) != "null" {
		var c int32
		if e := json.Unmarshal(raw, &c); e != nil {
			set(new(string), "", e)
		}
		ev.Code = int64(c)
	}
	for _, k := range []string{"requestObject", "responseObject"} {
		if raw, ok := top[k]; ok && string(raw) != "null" {
			if k == "requestObject" {
				ev.ReqObj = string(raw)
			} else {
				ev.RespObj = string(raw)
			}
		}
	}
	if raw, ok := top["annotations"]; ok && string(raw) != "null" {
		var ann map[string]string
		if e := json.Unmarshal(raw, &ann); e != nil {
			set(new(string), "", e)
		}
		ev.APFWait, ev.Total = ann[annAPFQueueWait], ann[annTotalLatency]
	}
	return ev, err
}

func fastToRef(ev *rawEvent) refEvent {
	s := func(b []byte) string { return fixUTF8(b) }
	u := func(x userInfo) refUser {
		return refUser{s(x.Username), s(x.UID), s(x.SessionName), s(x.ARN), s(x.CredentialID)}
	}
	o := ev.ObjectRef
	return refEvent{Kind: s(ev.Kind), APIVersion: s(ev.APIVersion), Level: s(ev.Level), AuditID: s(ev.AuditID),
		Stage: s(ev.Stage), RequestURI: s(ev.RequestURI), Verb: s(ev.Verb), User: u(ev.User), Imp: u(ev.ImpersonatedUser),
		SourceIP: s(ev.SourceIP), UserAgent: s(ev.UserAgent),
		Obj:    [7]string{s(o.Resource), s(o.Namespace), s(o.Name), s(o.UID), s(o.APIGroup), s(o.APIVersion), s(o.Subresource)},
		HasObj: ev.HasObjectRef, Code: ev.Code, ReqObj: string(ev.RequestObject), RespObj: string(ev.ResponseObject),
		Received: s(ev.Received), StageTime: s(ev.StageTime), Timestamp: s(ev.Timestamp),
		APFWait: s(ev.APFQueueWait), Total: s(ev.TotalLatency)}
}

// checkAgainstReference is the differential property: whenever encoding/json accepts a line,
// the fast parser accepts it too and extracts the same values.
func checkAgainstReference(t *testing.T, line []byte) {
	t.Helper()
	var ev rawEvent
	fastErr := parseEvent(line, &ev)
	ref, refErr := refParse(line)
	if refErr != nil {
		return // the fast parser may be more lenient on values it skips; it must not panic
	}
	if fastErr == errSkipStage {
		if countedStage([]byte(ref.Stage)) {
			t.Fatalf("skipped a counted stage %q: %q", ref.Stage, line)
		}
		return
	}
	if fastErr != nil {
		t.Fatalf("reference parses, fast parser fails with %v: %q", fastErr, line)
	}
	got := fastToRef(&ev)
	if got != ref {
		t.Fatalf("fast parser disagrees with reference on %q:\nfast %+v\nref  %+v", line, got, ref)
	}
}

func seedLines(t testing.TB) [][]byte {
	data, err := os.ReadFile("../testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

func TestParseEventSeed(t *testing.T) {
	lines := seedLines(t)
	for _, l := range lines {
		checkAgainstReference(t, l)
	}
	var ev rawEvent
	if err := parseEvent(lines[2], &ev); err != nil {
		t.Fatal(err)
	}
	if string(ev.User.Username) != "system:node:ip-10-29-79-205.ap-northeast-2.compute.internal" ||
		string(ev.User.SessionName) != "i-04ccfd26e5c668ef8" || ev.Code != 404 ||
		string(ev.ObjectRef.Resource) != "leases" || string(ev.SourceIP) != "10.29.79.205" {
		t.Fatalf("unexpected fields: %+v", fastToRef(&ev))
	}
}

func TestParseEventCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		wantErr bool
	}{
		{"minimal", `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get"}`, false},
		{"whitespace", " \t{ \"kind\" : \"Event\" , \"verb\":\"get\" } \r", false},
		{"escapes", `{"verb":"g\u0065t","userAgent":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00","user":{"username":"x\u0000y"}}`, false},
		{"lone surrogate", `{"userAgent":"\ud800x\udc00"}`, false},
		{"escaped key", `{"ve\u0072b":"list","annotations":{"apiserver.latency.k8s.io\/apf-queue-wait":"3ms"}}`, false},
		{"duplicate keys", `{"verb":"get","verb":"list","user":{"username":"a"},"user":{"uid":"u"}}`, false},
		{"nulls", `{"verb":null,"user":null,"objectRef":null,"sourceIPs":null,"responseStatus":{"code":null},"annotations":null}`, false},
		{"empty sourceIPs", `{"sourceIPs":[],"user":{"extra":{"sessionName":[]}}}`, false},
		{"unknown fields", `{"x":{"y":[1,2.5e-3,{"z":null}],"w":true},"verb":"get","q":-0}`, false},
		{"deep request object", `{"requestObject":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`, false},
		{"skipped stage", `{"stage":"RequestReceived","verb":"get","junk":` /* never read */, false},
		{"not an object", `["kind"]`, true},
		{"truncated", `{"kind":"Event","verb":"ge`, true},
		{"trailing garbage", `{"verb":"get"} x`, true},
		{"missing colon", `{"verb" "get"}`, true},
		{"bad literal", `{"x":tru}`, true},
		{"wrong type verb", `{"verb":5}`, true},
		{"wrong type code", `{"responseStatus":{"code":"404"}}`, true},
		{"code overflow", `{"responseStatus":{"code":4294967296}}`, true},
		{"fraction code", `{"responseStatus":{"code":404.0}}`, true},
		{"bad escape", `{"verb":"g\qt"}`, true},
		// Raw control characters in a string are accepted where no escape needs decoding
		// (checking every byte costs more than the strictness is worth), refused otherwise.
		{"control char", "{\"verb\":\"g\x01t\"}", false},
		{"control char with escape", "{\"verb\":\"g\x01t\\n\"}", true},
		{"mismatched brackets", `{"x":[1,2}}`, true},
		{"empty", ``, true},
		{"annotation not string", `{"annotations":{"a":1}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev rawEvent
			err := parseEvent([]byte(tc.line), &ev)
			if tc.name == "skipped stage" {
				if err != errSkipStage {
					t.Fatalf("got %v, want errSkipStage", err)
				}
				return
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			checkAgainstReference(t, []byte(tc.line))
		})
	}
}

func TestParseEventEscapedValues(t *testing.T) {
	var ev rawEvent
	line := `{"verb":"g\u0065t","userAgent":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00","user":{"username":"system:node:n\u0031"}}`
	if err := parseEvent([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if string(ev.Verb) != "get" || string(ev.UserAgent) != "a\"b\\c/d\n\té😀" || string(ev.User.Username) != "system:node:n1" {
		t.Fatalf("verb %q ua %q user %q", ev.Verb, ev.UserAgent, ev.User.Username)
	}
}

func TestParseTime(t *testing.T) {
	for _, s := range []string{
		"2024-04-05T05:58:52.744075Z", "2024-04-05T05:58:52Z", "2024-02-29T23:59:59.999999999Z",
		"1970-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
		"2024-04-05T05:58:52.744075+09:00", "2024-04-05T05:58:52.1234567891Z", "2023-02-29T00:00:00Z",
		"2024-13-01T00:00:00Z", "2024-04-05T24:00:00Z", "2024-04-05T05:58:60Z", "2024-04-05 05:58:52Z",
		"2024-04-05T05:58:52.Z", "garbage", "",
	} {
		got, ok := parseTime([]byte(s))
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok != (err == nil) {
			t.Errorf("%q: ok=%v, time.Parse err=%v", s, ok, err)
			continue
		}
		if ok && got != want.UnixNano() {
			t.Errorf("%q: got %d want %d", s, got, want.UnixNano())
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"kind":"Event","verb":"get","annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1.5ms"}}`))
	f.Add([]byte(`{"requestObject":{"metadata":{"ownerReferences":[{"kind":"Node","name":"n"}]}}}`))
	f.Add([]byte(`{"stage":"RequestReceived"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgainstReference(t, line)
		// The converter must not panic on anything either, with or without an export time.
		c := &converter{li: newLocalInterner(newInterner())}
		var rec Record
		c.convert(line, 0, &rec)
		c.convert(append(line, truncatedSuffix...), 1, &rec)
	})
}

func FuzzParseTime(f *testing.F) {
	f.Add("2024-04-05T05:58:52.744075Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTime([]byte(s))
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok != (err == nil) || (ok && got != want.UnixNano()) {
			t.Fatalf("%q: got %d,%v; time.Parse %v,%v", s, got, ok, want, err)
		}
	})
}

// stringEndEsc takes different paths for short and long strings and for runs of backslashes
// across its windows: compare it with the obvious byte loop on every string of a small alphabet.
func TestStringEndAgainstByteLoop(t *testing.T) {
	ref := func(b []byte) (int, bool) {
		esc := false
		for j := 1; j < len(b); j++ {
			switch b[j] {
			case '"':
				return j + 1, esc
			case '\\':
				esc = true
				j++
			}
		}
		return -1, esc
	}
	alphabet := []byte{'a', '"', '\\'}
	rng := uint64(1)
	next := func() uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
	for n := 0; n < 200000; n++ {
		l := int(next() % 70)
		b := make([]byte, l+1)
		b[0] = '"'
		for k := 1; k <= l; k++ {
			// Mostly plain bytes, so that quotes come late and long paths run.
			if next()%6 == 0 {
				b[k] = alphabet[1+next()%2]
			} else {
				b[k] = alphabet[0]
			}
		}
		gotEnd, gotEsc := stringEndEsc(b, 0)
		wantEnd, wantEsc := ref(b)
		if gotEnd != wantEnd || (wantEnd > 0 && gotEsc != wantEsc) {
			t.Fatalf("%q: got (%d,%v), want (%d,%v)", b, gotEnd, gotEsc, wantEnd, wantEsc)
		}
	}
}
