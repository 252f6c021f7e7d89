package bundle

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// seedJournal is `journalctl -u kubelet` output of the seed's node, in journalctl's default
// format with its header line.
func seedJournal() string {
	return "-- Logs begin at Mon 2024-03-04 09:10:02 UTC, end at Mon 2024-03-04 09:20:00 UTC. --\n" + seedFiles()["kubelet/kubelet.log"]
}

func TestJournalInput(t *testing.T) {
	want := "NK601:warning NK602:warning NK603:warning"
	seedWant := "NK601:warning NK602:warning NK603:warning NK605:warning NK614:error"
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"plain journal", []byte(seedJournal())},
		{"gzip journal", gzipped.Bytes(t, []byte(seedJournal()))},
		{"short-iso journal", []byte("2024-03-04T09:12:01+0000 ip-10-0-12-34 kubelet[3121]: E0304 09:12:01.123 3121 pod_workers.go:1301] \"pull QPS exceeded\"\n" +
			"2024-03-04T09:11:40+0000 ip-10-0-12-34 kubelet[3121]: E0304 09:11:40.114 3121 nodelease.go:49] \"Failed to get node when trying to set owner ref to the node lease\"\n" +
			"2024-03-04T09:15:00+0000 ip-10-0-12-34 kubelet[3121]: E0304 09:15:00.000 3121 kubelet_node_status.go:535] \"Unable to update node status\"\n")},
		{"bare klog lines", []byte("E0304 09:12:01.123    3121 pod_workers.go:1301] \"pull QPS exceeded\"\nE0304 09:11:40.114 3121 nodelease.go:49] \"Failed to get node when trying to set owner ref to the node lease\"\nE0304 09:15:00.000 3121 x.go:1] \"Unable to update node status\"\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Analyze(bytes.NewReader(tc.data), "kubelet.journal", Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			want := want
			if strings.Contains(tc.name, "journal") && !strings.Contains(tc.name, "short-iso") {
				want = seedWant
			}
			if got := strings.Join(findingstest.ReportCodes(rep), " "); got != want {
				t.Fatalf("got %s, want %s (a journal is checked for the kubelet log only)", got, want)
			}
			for _, sec := range rep.Sections() {
				if sec.Name == SectionIO || sec.Name == SectionBootstrap {
					t.Errorf("a journal's report shows section %s, which it cannot check", sec.Name)
				}
			}
			for _, f := range rep.Findings() {
				if !strings.HasPrefix(f.Evidence[0], "kubelet.journal:") {
					t.Errorf("evidence does not name the journal: %s", f.Evidence[0])
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"prose", []byte("just some text, not an archive\n"), "not a kubelet journal"},
		{"gzip of prose", gzipped.Bytes(t, []byte("hello\n")), "neither a tar archive"},
		{"truncated gzip journal", gzipped.Bytes(t, []byte(seedJournal()+incompressible(64<<10)))[:2000], "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Analyze(bytes.NewReader(tc.data), "kubelet.journal", Options{Now: testNow, Limits: Limits{MaxMemberSize: 4096}})
			if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// writeTree writes files under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDirectoryInput(t *testing.T) {
	archive := analyzeFiles(t, seedFiles(), Options{})
	for _, wrap := range []string{"", "eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8"} {
		dir := t.TempDir()
		writeTree(t, filepath.Join(dir, wrap), seedFiles())
		rep, err := AnalyzeFile(dir, Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(findingstest.ReportCodes(rep), " "), strings.Join(findingstest.ReportCodes(archive), " "); got != want {
			t.Errorf("wrap %q: directory gives %s, the archive %s", wrap, got, want)
		}
	}
}

// TestHostileDirectories: the directory reader refuses what the tar reader refuses.
func TestHostileDirectories(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "not for bundle\n"})
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir string)
		limits Limits
		want   string
	}{
		{"symlink out of the directory", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "kubelet", "kubelet.log")); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, "symbolic link"},
		{"symlinked directory", func(t *testing.T, dir string) {
			if err := os.Symlink(outside, filepath.Join(dir, "var_log")); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, "symbolic link"},
		{"fifo", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "kubelet", "kubelet.log"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, "not a regular file"},
		{"file above the member cap", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"kubelet/kubelet.log": strings.Repeat("x", 5000)})
		}, Limits{MaxMemberSize: 4096}, "above the cap of 4096"},
		{"directory above the total cap", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"a": strings.Repeat("x", 3000), "b": strings.Repeat("x", 3000)})
		}, Limits{MaxTotalSize: 5000}, "more than 5000 bytes"},
		{"too many files", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"a": "1", "b": "2", "c": "3"})
		}, Limits{MaxMembers: 3}, "more than 3 members"},
		{"empty", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "kubelet")); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "kubelet"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir)
			_, err := AnalyzeFile(dir, Options{Now: testNow, Limits: tc.limits})
			if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
