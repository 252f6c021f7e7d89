package bundle

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// TestNothingRecognised: an input that holds nothing the checks read is an error that says what
// was looked for, not a clean report ("errors 0 warnings 0 skipped 7", exit 0) that a CI gate
// lets through.
func TestNothingRecognised(t *testing.T) {
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	notBundle := map[string]string{"README.md": "# my notes\n", "data.bin": string(random)}
	onlyDirs := []member{{Name: "./", Typeflag: tar.TypeDir}, {Name: "./kubelet/", Typeflag: tar.TypeDir}, {Name: "./var_log/", Typeflag: tar.TypeDir}}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) error
		want string
	}{
		{"tarball of a README and random bytes", func(t *testing.T) error {
			_, err := analyzeBytes(t, tarGz(t, collectorLayout(notBundle)), Options{})
			return err
		}, "none of its 2 files"},
		{"tarball of empty directories", func(t *testing.T) error {
			_, err := analyzeBytes(t, tarGz(t, onlyDirs), Options{})
			return err
		}, "none of its 0 files"},
		{"directory of a README and random bytes", func(t *testing.T) error {
			dir := t.TempDir()
			writeTree(t, dir, notBundle)
			_, err := AnalyzeFile(dir, Options{Now: testNow})
			return err
		}, "none of its 2 files"},
		{"directory of empty directories", func(t *testing.T) error {
			dir := t.TempDir()
			for _, d := range []string{"kubelet", "var_log/aws-routed-eni", "eks_i-0123/system"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := AnalyzeFile(dir, Options{Now: testNow})
			return err
		}, "none of its 0 files"},
		{"files under a wrapping directory that are not the collector's", func(t *testing.T) error {
			dir := t.TempDir()
			writeTree(t, filepath.Join(dir, "eks_i-0123"), map[string]string{"notes/kubelet.log": "x\n"})
			_, err := AnalyzeFile(dir, Options{Now: testNow})
			return err
		}, "none of its 1 files"},
		{"journal with no entries", func(t *testing.T) error {
			_, err := analyzeBytes(t, []byte("-- No entries --\n"), Options{})
			return err
		}, "holds no line of the kubelet (1 lines read"},
		{"gzip journal of another unit", func(t *testing.T) error {
			_, err := analyzeBytes(t, gzipped.Bytes(t, []byte("-- Logs begin at Mon 2024-03-04 09:10:02 UTC. --\nMar 04 09:11:40 ip-10-0-1-2 containerd[812]: time=\"2024-03-04T09:11:40Z\" level=info msg=\"starting containerd\"\n")), Options{})
			return err
		}, "holds no line of the kubelet (2 lines read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if err == nil || !errors.Is(err, ErrNotRecognised) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrNotRecognised with %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "looked for") || !strings.Contains(err.Error(), "kubelet") {
				t.Errorf("the error does not say what was looked for: %v", err)
			}
		})
	}
	// One file a check reads is enough: the rest is reported as missing (NK641), as before.
	rep, err := analyzeBytes(t, tarGz(t, collectorLayout(map[string]string{"README.md": "x\n", "system/instance-id.txt": "i-1\n"})), Options{})
	if err != nil || len(rep.Findings()) == 0 {
		t.Fatalf("a bundle with one file the checks read: %v", err)
	}
	if _, err := analyzeBytes(t, bytes.Clone([]byte(seedJournal())), Options{}); err != nil {
		t.Fatalf("the seed's journal: %v", err)
	}
}
