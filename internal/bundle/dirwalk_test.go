package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// countingReadDir counts the entries the directory reader was handed, and the calls.
type countingReadDir struct{ calls, entries int }

func (c *countingReadDir) readDir(f *os.File, n int) ([]os.DirEntry, error) {
	c.calls++
	d, err := f.ReadDir(n)
	c.entries += len(d)
	return d, err
}

// TestDirectoryMemberCapStopsReading: the member cap is applied while a directory is listed, a
// batch at a time, not after a whole directory was read and sorted (fs.WalkDir: a directory of
// 500,000 files took 500 MB before "more than 200000 members" was reported). With a cap of 32
// and batches of 8, a directory of four times the cap is refused after at most cap + one batch
// of entries were listed (twice that for files at the root, which is listed once more to find
// the top directory); exactly the cap is accepted.
func TestDirectoryMemberCapStopsReading(t *testing.T) {
	const maxMembers, batch = 32, 8
	for _, tc := range []struct {
		files   int
		under   string // directory of the files
		refused bool
		listed  int // at most this many entries listed
	}{
		{maxMembers - 1, "var_log/", false, maxMembers}, // the files and their directory make the cap
		{maxMembers, "var_log/", true, maxMembers + batch},
		{4 * maxMembers, "var_log/", true, maxMembers + batch},
		{maxMembers, "", false, 2 * maxMembers},
		{maxMembers + 1, "", true, 2 * (maxMembers + batch)},
		{4 * maxMembers, "", true, 2 * (maxMembers + batch)},
	} {
		t.Run(fmt.Sprintf("%d files in %q", tc.files, tc.under), func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for i := range tc.files {
				files[fmt.Sprintf("%sf%04d.log", tc.under, i)] = "x\n"
			}
			writeTree(t, dir, files)
			var c countingReadDir
			w := dirWalk{limits: Limits{MaxMembers: maxMembers}, batch: batch, readDir: c.readDir}
			visited := 0
			err := w.walk(dir, func(Member, io.Reader) error { visited++; return nil })
			if c.calls == 0 || c.entries > tc.listed+1 {
				t.Errorf("%d entries listed in %d calls (cap %d, batches of %d); at most %d should be", c.entries, c.calls, maxMembers, batch, tc.listed+1)
			}
			if !tc.refused {
				if err != nil || visited != tc.files {
					t.Fatalf("err = %v, %d files visited of %d", err, visited, tc.files)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d members", maxMembers)) {
				t.Fatalf("err = %v, want the member cap", err)
			}
			if visited >= maxMembers {
				t.Errorf("%d files visited", visited)
			}
		})
	}
}

// TestDirectoryTopDir: the directory that wraps the collector's files is found whatever lies
// beside it at the root, and whatever the order of the root.
func TestDirectoryTopDir(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"README": "notes\n", "zzz.txt": "x\n"})
	writeTree(t, filepath.Join(dir, "eks_i-0123456789abcdef0"), seedFiles())
	rep, err := AnalyzeFile(dir, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(findingstest.ReportCodes(rep)); n != seedFindings {
		t.Fatalf("%d findings, want the seed's %d: %v", n, seedFindings, findingstest.ReportCodes(rep))
	}
}

// TestDirectoryDepthCap: every directory level open at once holds a descriptor and a batch; a
// tree deeper than MaxDirDepth is refused.
func TestDirectoryDepthCap(t *testing.T) {
	dir := t.TempDir()
	deep := strings.Repeat("d/", MaxDirDepth+1) + "kubelet.log"
	writeTree(t, dir, map[string]string{deep: "x\n"})
	_, err := AnalyzeFile(dir, Options{Now: testNow})
	if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("err = %v", err)
	}
	ok := t.TempDir()
	writeTree(t, ok, map[string]string{strings.Repeat("d/", MaxDirDepth-2) + "x": "x\n", "kubelet/kubelet.log": seedFiles()["kubelet/kubelet.log"]})
	if _, err := AnalyzeFile(ok, Options{Now: testNow}); err != nil {
		t.Fatalf("a tree %d deep: %v", MaxDirDepth-1, err)
	}
}

// TestDirectoryOrderDoesNotMatter: a directory is read in its own order, which differs between
// file systems and copies. The report must not: the same files listed in opposite orders give
// the same text, and the same as the archive. The seed's files are spread so that one pattern
// (ipamd connection refused) matches in several files, rotated ipamd logs name two versions,
// two files say containerd is the runtime, and two kubelet drop-ins cannot be read.
func TestDirectoryOrderDoesNotMatter(t *testing.T) {
	files := seedFiles()
	refused := `{"level":"error","msg":"dial tcp 127.0.0.1:50051: connect: connection refused"}` + "\n"
	files["var_log/aws-routed-eni/plugin.log"] += refused + refused
	files["var_log/aws-routed-eni/plugin-2024-03-03T10-00-00.000.log"] = refused + refused
	files["var_log/aws-routed-eni/ipamd-2024-03-03T10-00-00.000.log"] = `{"msg":"Starting L-IPAMD v1.11.0  ..."}` + "\n" + `{"msg":"Found instance-type: m5.large "}` + "\n"
	files["kubelet/kubelet.log"] += "Mar 04 09:17:00 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 x] \"connect: connection refused\" to /var/run/aws-node/ipamd.sock\n"
	files["containerd/containerd-config.txt"] = "version = 2\n"
	// The version from the logs, not from the aws-node container's image.
	delete(files, "cni/cni-configuration-variables-containerd.json")
	files["kubelet/config.json.d/00-a.conf"] = "not json"
	files["kubelet/config.json.d/10-b.conf"] = "{also not json"
	// Boot logs: the same script failure in two files with and without its status, commands not
	// found past the listing's bound, a second boot, nodeadm's errors in two journals.
	files[pCloudInitLog] = al2023Failed + strings.Replace(al2Stage, "09:11:20", "09:11:21", 1)
	for i := 0; i < 7; i++ {
		files[pCloudInitOut] += fmt.Sprintf("/var/lib/cloud/instance/scripts/part-001: line %d: tool%d: command not found\n", 10-i, i)
	}
	files[pCloudInitOut] += al2Failed
	files["nodeadm/nodeadm-config.log"] = nodeadmConfigFailed
	files["nodeadm/nodeadm-run.log"] = nodeadmRunSkipped
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "eks_i-0123456789abcdef0"), files)

	text := func(rep *findings.Report) string {
		var b bytes.Buffer
		if err := findings.PrintText(&b, rep, findings.PrintOptions{MaxPerRule: -1}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	order := func(reverse bool) string {
		a := newAnalysis(Options{Now: testNow}.withDefaults())
		a.kind = InputDirectory
		w := dirWalk{batch: 3, readDir: func(f *os.File, n int) ([]os.DirEntry, error) {
			// Whole directories, sorted one way or the other, handed out n at a time.
			all, err := f.ReadDir(-1)
			if err != nil {
				return nil, err
			}
			slices.SortFunc(all, func(x, y os.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
			if reverse {
				slices.Reverse(all)
			}
			return all, io.EOF
		}}
		if err := w.walk(dir, a.visit); err != nil {
			t.Fatal(err)
		}
		return text(a.finish("bundle/"))
	}
	forward, backward := order(false), order(true)
	if forward != backward {
		t.Fatalf("the report depends on the order of the directory:\n--- sorted\n%s\n--- reversed\n%s", forward, backward)
	}
	ms := collectorLayout(files)
	slices.Reverse(ms)
	archive, err := Analyze(bytes.NewReader(tarGz(t, ms)), "bundle/", Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(archive); got != forward {
		t.Errorf("an archive packed in another order gives another report:\n--- directory\n%s\n--- archive\n%s", forward, got)
	}
	for _, want := range []string{"VPC CNI 1.12.0 predates", "kubelet.log:8: Mar 04 09:17:00", "plugin-2024-03-03T10-00-00.000.log:1:", "plugin.log:4:", "containerd is the runtime: containerd/containerd-config.txt",
		"part-001 exited with status 1; cloud-init module scripts-user", "tool0 (part-001 line 10); tool1", "nodeadm-run.service did not run", "came at T+29s"} {
		if !strings.Contains(forward, want) {
			t.Errorf("report lacks %q (the newest log's version, the first lines by file name and the last)", want)
		}
	}
}
