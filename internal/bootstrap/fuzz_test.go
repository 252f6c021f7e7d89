package bootstrap

import (
	"testing"
)

// FuzzSplit: whatever the bytes (a launch template's user data is written by whoever may edit
// it), Split and Kubelet return without panicking, within their bounds: problems listed at most
// MaxProblems plus the two summary lines, parts at most MaxParts.
func FuzzSplit(f *testing.F) {
	for _, seed := range []string{al2Script, al2023, mngMIME, string(b64([]byte(mngMIME))), "", "\x1f\x8b", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := Split("fuzz", "ud", data)
		if err != nil {
			return
		}
		_ = u.Kubelet()
		if n := len(u.Problems()); n > MaxProblems+2 {
			t.Errorf("%d problems listed", n)
		}
		if len(u.Parts) > MaxParts {
			t.Errorf("%d parts", len(u.Parts))
		}
	})
}
