package doctor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// TestReadNodeDeletions: the Node deletions of an audit log with who and where; a cut line is
// skipped with a warning naming its line; a log without any audit event, or that cannot be
// read, is an error.
func TestReadNodeDeletions(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	line := func(ev map[string]any) string {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	del := line(auditEvent(at, "delete", "alice", "kubectl/v1.31.0", "nodes", "ip-10-0-1-5.ec2.internal", 200))
	get := line(auditEvent(at.Add(-time.Minute), "get", "bob", "kubectl/v1.31.0", "nodes", "ip-10-0-1-5.ec2.internal", 200))
	failed := line(auditEvent(at.Add(time.Minute), "delete", "carol", "kubectl/v1.31.0", "nodes", "ip-10-0-1-6.ec2.internal", 403))
	for _, tc := range []struct {
		name    string
		content string
		want    []string // node/user/line of each deletion
		warn    string
		err     string
	}{
		{"one deletion among other requests", get + "\n" + del + "\n" + failed + "\n", []string{"ip-10-0-1-5.ec2.internal/alice/:line 2"}, "", ""},
		{"a cut line is skipped and told", del + "\n" + del[:40] + "\n", []string{"ip-10-0-1-5.ec2.internal/alice/:line 1"}, "1 of 2 lines are not audit events and were skipped; first: ", ""},
		{"nothing but a cut line", del[:40] + "\n", nil, "", "unexpected EOF"},
		{"lines that are not audit events", "not json\nneither\n", nil, "", "no kube-apiserver audit event in 2 lines; first unusable: "},
		{"empty", "", nil, "", "no kube-apiserver audit event (ResponseComplete) in 0 lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var warned []string
			got, err := ReadNodeDeletions([]string{path}, func(s string) { warned = append(warned, s) })
			if textcheck.WantError(t, err, tc.err) {
				return
			}
			var summary []string
			for _, d := range got {
				summary = append(summary, d.Node+"/"+d.User+"/"+strings.TrimPrefix(d.Where, path))
			}
			if strings.Join(summary, " ") != strings.Join(tc.want, " ") {
				t.Errorf("deletions %v, want %v", summary, tc.want)
			}
			switch {
			case tc.warn == "" && len(warned) > 0:
				t.Errorf("warned %q", warned)
			case tc.warn != "" && (len(warned) != 1 || !strings.Contains(warned[0], tc.warn) || !strings.Contains(warned[0], path+" line 2")):
				t.Errorf("warned %q, want %q naming line 2", warned, tc.warn)
			}
		})
	}
}
