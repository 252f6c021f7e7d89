package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records the failure instead of ending the test.
type fatalRecorder struct {
	testing.TB
	failure string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	panic(r)
}
func (r *fatalRecorder) Fatal(args ...any) {
	r.failure = fmt.Sprint(args...)
	panic(r)
}

// TestReadAudit: only lines that mention the string are decoded, the line being written is left
// for the next read, and a line that does not decode fails the test with its number.
func TestReadAudit(t *testing.T) {
	get := `{"stage":"ResponseComplete","verb":"get","objectRef":{"resource":"leases","name":"a"},"responseStatus":{"code":404},"user":{"username":"u"}}`
	started := `{"stage":"ResponseStarted","verb":"watch","objectRef":{"resource":"leases","name":"b"}}`
	for _, tc := range []struct {
		name, log, mentions string
		want                []string // String of each event kept
		wantFailure         string
	}{
		{name: "every line", log: get + "\n" + started + "\n", want: []string{"00:00:00.000 get leases/a 404 by u", "00:00:00.000 watch leases/b 0 by "}},
		{name: "mentions filters before decoding", log: get + "\n{not json, about b}\n", mentions: `"a"`, want: []string{"00:00:00.000 get leases/a 404 by u"}},
		{name: "a partial last line waits", log: get + "\n" + started[:20], want: []string{"00:00:00.000 get leases/a 404 by u"}},
		{name: "a bad line fails with its number", log: get + "\n{oops\n" + get + "\n", wantFailure: "line 2"},
		{name: "a line above the bound fails", log: get + "\n" + `{"verb":"` + strings.Repeat("x", maxAuditLine) + `"}` + "\n", wantFailure: "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			r := &fatalRecorder{TB: t}
			var got []string
			func() {
				defer func() {
					if p := recover(); p != nil && p != r {
						panic(p)
					}
				}()
				for _, e := range ReadAudit(r, path, tc.mentions, nil) {
					got = append(got, e.String())
				}
			}()
			if tc.wantFailure != "" {
				if !strings.Contains(r.failure, tc.wantFailure) {
					t.Fatalf("failure %q, want one naming %q", r.failure, tc.wantFailure)
				}
				return
			}
			if r.failure != "" {
				t.Fatalf("unexpected failure: %s", r.failure)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}
