package gobuild

import (
	"os/exec"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

func TestOnce(t *testing.T) {
	tests := []struct {
		pkg, name string
		wantOut   string // what the binary prints given "a b"
		wantErr   string
	}{
		{"./testdata/hello", "hello", "[a b]\n", ""},
		{"./testdata/broken", "broken", "", "undefinedName"},
		{"./testdata/absent", "absent", "", "go build ./testdata/absent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := Once(tc.pkg, tc.name)
			bin, err := build()
			if textcheck.WantError(t, err, tc.wantErr) {
				return
			}
			// A second call returns the same binary instead of building again.
			if again := Must(t, build); again != bin {
				t.Errorf("second call gave %s, first %s", again, bin)
			}
			out, err := exec.Command(bin, "a", "b").Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.wantOut {
				t.Errorf("%s printed %q, want %q", bin, out, tc.wantOut)
			}
		})
	}
}
