package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// TestBundleInputs: bundle fails (exit 1, saying what it looked for) on an input with nothing
// to check, instead of a clean report that --fail-on lets through; and a journal above the cap
// gives the report of what was read, marked partial on stderr and in the report.
func TestBundleInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("notabundle/README.md", "# notes\n")
	write("notabundle/data.bin", "\x00\x01\x02 random")
	if err := os.MkdirAll(filepath.Join(dir, "emptydirs", "kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	noEntries := write("none.journal", "-- No entries --\n")
	qpsLine := `Mar 04 09:15:01 ip-10-0-1-12 kubelet[2101]: E0304 09:15:01.000000    2101 pod_workers.go:1298] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"app\" with ErrImagePull: \"pull QPS exceeded\"" pod="default/app-1"` + "\n"
	long := write("long.journal", strings.Repeat(qpsLine, 100))
	notes := write("notes.txt", "my notes about the node\n")
	gzUserData := write("user-data.gz", string(gzipped.Bytes(t, []byte("#!/bin/bash\nhostnamectl set-hostname app-node-01\n"))))

	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stderr  []string
		stdout  []string
		noWarns bool
	}{
		{"directory without a collector file", []string{"bundle", filepath.Join(dir, "notabundle"), "--fail-on", "none"}, 1,
			[]string{"not an EKS logs collector bundle: none of its 2 files", "looked for kubelet/kubelet.log"}, nil, false},
		{"directory of empty directories", []string{"bundle", filepath.Join(dir, "emptydirs")}, 1,
			[]string{"none of its 0 files"}, nil, false},
		{"journal without entries", []string{"bundle", noEntries, "--fail-on", "none"}, 1,
			[]string{"holds no line of the kubelet"}, nil, false},
		{"journal above the cap", []string{"bundle", long, "--max-member-size", "4096"}, 3,
			[]string{"warning: " + long + ": the report is partial: the journal \"long.journal\" is longer than 4096 bytes (--max-member-size)"},
			[]string{"\npartial: the journal", "NK601"}, false},
		{"journal above the cap, JSON", []string{"bundle", long, "--max-member-size", "4096", "-o", "json", "--fail-on", "none"}, 0,
			[]string{"the report is partial"}, []string{`"partial": true`, `"partialReason": "the journal`}, false},
		{"user data that is nothing cloud-init runs", []string{"bundle", long, "--user-data", notes, "--fail-on", "none"}, 1,
			[]string{"--user-data \"notes.txt\" is nothing cloud-init or nodeadm runs: looked for"}, nil, false},
		{"gzip user data", []string{"bundle", long, "--user-data", gzUserData, "-o", "json", "--fail-on", "none"}, 0,
			nil, []string{`"NK631"`}, true},
		{"whole journal", []string{"bundle", long, "-o", "json", "--fail-on", "none"}, 0, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := execute(t, false, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if tc.noWarns && (stderr != "" || strings.Contains(stdout, "partial")) {
				t.Errorf("a whole journal: stderr %q, partial in stdout: %v", stderr, strings.Contains(stdout, "partial"))
			}
		})
	}
}
