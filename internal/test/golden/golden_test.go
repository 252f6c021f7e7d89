package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

// TestAssert: equal output passes, different or missing golden files fail, -update writes the
// file (and its directory) so that the next comparison passes.
func TestAssert(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sub", "out.txt")
	for _, tc := range []struct {
		name     string
		updating bool
		got      string
		wantFail bool
	}{
		{"missing", false, "a\n", true},
		{"update creates", true, "a\n", false},
		{"equal", false, "a\n", false},
		{"different", false, "b\n", true},
	} {
		*update = tc.updating
		r := &recorder{TB: t}
		Assert(r, file, []byte(tc.got))
		if r.failed != tc.wantFail {
			t.Errorf("%s: failed %v, want %v", tc.name, r.failed, tc.wantFail)
		}
	}
	*update = false
	if data, err := os.ReadFile(file); err != nil || string(data) != "a\n" {
		t.Fatalf("golden file: %q, %v", data, err)
	}
}
