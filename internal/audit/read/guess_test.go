package read

import (
	"fmt"
	"strings"
	"testing"
)

// parseAfter parses line with a rawEvent that first parsed each of before, so that its key
// guesses and remembered values are those the earlier lines left (see keyGuess).
func parseAfter(before [][]byte, line []byte) (refEvent, error) {
	var ev rawEvent
	for _, b := range before {
		_ = parseEvent(b, &ev)
	}
	err := parseEvent(line, &ev)
	return fastToRef(&ev), err
}

// checkAfter is the property the guesses must keep: what a line parses to, and whether it
// parses, does not depend on the lines parsed before it.
func checkAfter(t *testing.T, before [][]byte, line []byte) {
	t.Helper()
	want, wantErr := parseAfter(nil, line)
	got, gotErr := parseAfter(before, line)
	if (wantErr == nil) != (gotErr == nil) || (wantErr == errSkipStage) != (gotErr == errSkipStage) {
		t.Fatalf("after %q\n%q: err %v, alone %v", before, line, gotErr, wantErr)
	}
	if wantErr == nil && got != want {
		t.Fatalf("after %q\n%q:\ngot   %+v\nalone %+v", before, line, got, want)
	}
}

// TestParseEventAfterOtherLines: a line that starts like the previous one (the same key,
// a value with the same first bytes) is parsed as it is, not as the previous one was.
func TestParseEventAfterOtherLines(t *testing.T) {
	for _, tc := range []struct{ name, before, line string }{
		{"number that goes on", `{"x":12,"verb":"get"}`, `{"x":123,"verb":"get"}`},
		{"number with a fraction", `{"x":1,"verb":"get"}`, `{"x":1.5e3,"verb":"get"}`},
		{"number in the status", `{"responseStatus":{"metadata":1,"code":200}}`, `{"responseStatus":{"metadata":10,"code":200}}`},
		{"string that goes on", `{"verb":"get"}`, `{"verb":"get\"x"}`},
		{"string now escaped", `{"verb":"get","userAgent":"k"}`, `{"verb":"g\u0065t","userAgent":"k"}`},
		{"string then garbage", `{"verb":"get"}`, `{"verb":"get"x}`},
		{"array that goes on", `{"user":{"groups":["a"]},"verb":"get"}`, `{"user":{"groups":["a"]]},"verb":"get"}`},
		{"array now longer", `{"user":{"groups":["a","b"]}}`, `{"user":{"groups":["a","b","c"]}}`},
		{"skipped object", `{"x":{"a":1},"verb":"get"}`, `{"x":{"a":1}},"verb":"get"}`},
		{"key now spaced", `{"kind":"Event","verb":"get"}`, `{"kind" : "Event","verb" :"list"}`},
		{"key now escaped", `{"kind":"Event","verb":"get"}`, `{"kind":"Event","v\u0065rb":"list"}`},
		{"key a prefix of the guess", `{"verb":"get","userAgent":"a"}`, `{"verb":"get","user":{"username":"u"}}`},
		{"key ends the line", `{"verb":"get","userAgent":"a"}`, `{"verb":"get","userAgent":`},
		{"learned key now other", `{"zz":"1","verb":"get"}`, `{"zy":"1","verb":"list"}`},
		{"learned key now known", `{"zz":"1","verb":"get"}`, `{"verb":"1","zz":"get"}`},
		{"annotation now a number", `{"annotations":{"a":"1"}}`, `{"annotations":{"a":1}}`},
		{"stage now skipped", `{"stage":"ResponseComplete","verb":"get"}`, `{"stage":"RequestReceived","verb":"get"}`},
		{"value now null", `{"objectRef":{"resource":"leases"},"user":{"groups":["a"]}}`, `{"objectRef":{"resource":null},"user":{"groups":null}}`},
		{"impersonated user shares the guesses", `{"user":{"username":"a","groups":["g"]}}`, `{"user":{"username":"a"},"impersonatedUser":{"username":"b","groups":["g"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := [][]byte{[]byte(tc.before), []byte(tc.before)}
			checkAfter(t, before, []byte(tc.line))
			got, err := parseAfter(before, []byte(tc.line))
			if ref, refErr := refParse([]byte(tc.line)); refErr == nil && err == nil {
				if got != ref {
					t.Fatalf("after %q: %+v, reference %+v", tc.before, got, ref)
				}
			}
		})
	}
}

// TestParseEventLearnsBoundedKeys: keys outside the parser's sets are remembered up to
// maxLearned per object and maxLearnedLen bytes each; a log naming new keys on every line
// keeps the same memory and parses as a fresh parser does.
func TestParseEventLearnsBoundedKeys(t *testing.T) {
	var ev rawEvent
	for i := 0; i < 1000; i++ {
		line := fmt.Sprintf(`{"k%d":"%s","verb":"get","%s":[1]}`, i, strings.Repeat("v", i%200), strings.Repeat("x", i))
		if err := parseEvent([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		checkAfter(t, [][]byte{[]byte(line)}, []byte(line))
	}
	g := ev.guesses.top
	if g.n != maxLearned {
		t.Fatalf("learned %d keys, want the bound %d", g.n, maxLearned)
	}
	for k, v := range g.last {
		if len(v) > maxMemoValue {
			t.Fatalf("remembered %d bytes for key %d, bound %d", len(v), k, maxMemoValue)
		}
	}
	for _, q := range g.learned[:g.n] {
		if len(q.s) > maxLearnedLen {
			t.Fatalf("learned a %d-byte key, bound %d", len(q.s), maxLearnedLen)
		}
	}
}

// FuzzParseEventAfter: whatever came before, a line parses as it does alone, and as the
// reference does when the reference accepts it.
func FuzzParseEventAfter(f *testing.F) {
	lines := seedLines(f)
	for i := 1; i < len(lines); i++ {
		f.Add(lines[i-1], lines[i])
	}
	f.Add([]byte(`{"x":12,"verb":"get","user":{"groups":["a"]}}`), []byte(`{"x":123,"verb":"get","user":{"groups":["a"]]}}`))
	f.Add([]byte(`{"zz":"1","annotations":{"a":"b"}}`), []byte(`{"zz" :"1","annotations":{"a":"b\"c"}}`))
	f.Fuzz(func(t *testing.T, before, line []byte) {
		checkAfter(t, [][]byte{before, before}, line)
		got, err := parseAfter([][]byte{before, before}, line)
		if err != nil {
			return
		}
		if ref, refErr := refParse(line); refErr == nil && got != ref {
			t.Fatalf("after %q\n%q:\ngot %+v\nref %+v", before, line, got, ref)
		}
	})
}
