package textcheck

import (
	"fmt"
	"strings"
	"testing"
)

// errorRecorder is a testing.TB that records Errorf messages instead of failing the test.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Helper() {}
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestContains: each missing wanted string and each present unwanted one is one error naming it.
func TestContains(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, not []string
		errors    []string
	}{
		{"all there, nothing unwanted", []string{"alpha", "beta"}, []string{"gamma"}, nil},
		{"one missing", []string{"alpha", "delta"}, nil, []string{`out lacks "delta"`}},
		{"one unwanted", nil, []string{"beta", "gamma"}, []string{`out has "beta"`}},
		{"both", []string{"delta"}, []string{"alpha"}, []string{`out lacks "delta"`, `out has "alpha"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &errorRecorder{TB: t}
			Contains(r, "out", "alpha beta", tc.want, tc.not)
			if len(r.errors) != len(tc.errors) {
				t.Fatalf("errors %q, want %q", r.errors, tc.errors)
			}
			for i, e := range r.errors {
				if !strings.HasPrefix(e, tc.errors[i]) {
					t.Errorf("error %d is %q, want it to start with %q", i, e, tc.errors[i])
				}
			}
		})
	}
}
