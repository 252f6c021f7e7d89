package textcheck

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Errorf and Fatalf messages instead of failing the test
// (its Fatalf returns: the helpers under test must not go on after it).
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
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
			r := &recorder{TB: t}
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

// TestWantError: an expected error ends the case, a wrong or missing one fails it, and an
// unexpected one fails a case that wanted none.
func TestWantError(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		want     string
		wantDone bool
		fatal    string
	}{
		{"no error wanted, none came", nil, "", false, ""},
		{"no error wanted, one came", fmt.Errorf("boom"), "", false, "unexpected error: boom"},
		{"error wanted and came", fmt.Errorf("line 3: bad field"), "line 3", true, ""},
		{"error wanted, another came", fmt.Errorf("line 4: bad field"), "line 3", true, `error line 4: bad field, want one mentioning "line 3"`},
		{"error wanted, none came", nil, "line 3", true, `error <nil>, want one mentioning "line 3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if done := WantError(r, tc.err, tc.want); done != tc.wantDone {
				t.Errorf("WantError returned %v, want %v", done, tc.wantDone)
			}
			switch {
			case tc.fatal == "" && len(r.fatals) > 0:
				t.Errorf("failed the test: %q", r.fatals)
			case tc.fatal != "" && (len(r.fatals) != 1 || r.fatals[0] != tc.fatal):
				t.Errorf("failures %q, want exactly %q", r.fatals, tc.fatal)
			}
		})
	}
}
