package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// paxNameArchive builds the archive of issue 10 item 3: members regular files whose PAX names are
// about 1 MB long, all different. Compressing 1,800 MB would take the test far too long, so the
// archive is a multi-member gzip stream: the megabyte of "a" shared by every name is compressed
// once and its gzip member repeated; only each member's header and unique tail are compressed
// per member. A gzip reader sees one stream, exactly what a tar -z of these members produces.
func paxNameArchive(t testing.TB, members, nameLen int) []byte {
	t.Helper()
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestCompression)
	gzMember := func(b []byte) []byte {
		var buf bytes.Buffer
		zw.Reset(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Bytes()
	}
	bulk := strings.Repeat("a", nameLen)
	var one bytes.Buffer
	tw := tar.NewWriter(&one)
	if err := tw.WriteHeader(&tar.Header{Name: bulk + "-00000", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte("x"))
	_ = tw.Flush()
	b := one.Bytes()
	start := bytes.Index(b, []byte("path="+bulk[:64]))
	if start < 0 {
		t.Fatal("no PAX path record")
	}
	start += len("path=")
	end := start + nameLen
	// The ustar header after the PAX record holds a cut-down name without the unique digits, so
	// each member differs from the first only in the six digits at the start of tail.
	if !bytes.HasPrefix(b[end:], []byte("-00000")) || bytes.Contains(b[end+6:], []byte("-00000")) {
		t.Fatal("the unique part of the name appears twice in a member")
	}
	head, shared := gzMember(b[:start]), gzMember(b[start:end])
	var out bytes.Buffer
	for i := 0; i < members; i++ {
		tail := append([]byte(nil), b[end:]...)
		copy(tail, fmt.Sprintf("-%05d", i))
		out.Write(head)
		out.Write(shared)
		out.Write(gzMember(tail))
	}
	out.Write(gzMember(make([]byte, 1024))) // the tar end marker
	return out.Bytes()
}

// TestHugeMemberNamesRefused: 1,800 members with 1 MB PAX names (a 1.9 MB archive) took 2.44 GB
// and 27 s when names were unbounded and kept. The first such name is now refused, naming the
// member (escaped and clipped), and the reader allocates a few MB at most (the tar reader's own
// 1 MiB PAX buffer for the one header it read).
func TestHugeMemberNamesRefused(t *testing.T) {
	data := paxNameArchive(t, 1800, 1_000_000)
	t.Logf("archive: %d bytes", len(data))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := analyzeBytes(t, data, Options{})
	runtime.ReadMemStats(&after)
	if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), "above the limit of 4096") {
		t.Fatalf("err = %v", err)
	}
	if len(err.Error()) > 600 {
		t.Errorf("the error quotes %d bytes of the name; it must be clipped", len(err.Error()))
	}
	const budget = 24 << 20
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("refused after allocating %d bytes: %v", got, err)
	if got > budget {
		t.Fatalf("reading the archive allocated %d bytes, want at most %d", got, budget)
	}
}

// TestDuplicateSetKeepsHashes: duplicates are still found when only hashes are kept, also for
// names that differ only after cleaning.
func TestDuplicateSetKeepsHashes(t *testing.T) {
	long := "kubelet/" + strings.Repeat("n", MaxNameLength-20)
	for _, tc := range []struct{ a, b string }{
		{"./kubelet/kubelet.log", "kubelet/kubelet.log"},
		{"./" + long, long},
		{"kubelet//x.log", "kubelet/./x.log"},
	} {
		data := tarGz(t, []member{{Name: tc.a, Body: "1"}, {Name: tc.b, Body: "2"}})
		if _, err := analyzeBytes(t, data, Options{}); err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Errorf("%.40q / %.40q: err = %v", tc.a, tc.b, err)
		}
	}
	g := newMemberGate(Limits{})
	for i := 0; i < 1000; i++ {
		if _, err := g.accept(fmt.Sprintf("kubelet/%d.log", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.seen) != 1000 {
		t.Fatalf("%d names remembered", len(g.seen))
	}
}

// incompressible returns n random bytes made of printable lines, so that a truncated gzip stream
// ends inside them.
func incompressible(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 'a' + b[i]%26
		if i%100 == 99 {
			b[i] = '\n'
		}
	}
	return string(b)
}

// TestTruncatedBundle: a bundle cut short says "truncated" and which member, not only
// "unexpected EOF" (issue 10 item 10).
func TestTruncatedBundle(t *testing.T) {
	full := tarGz(t, []member{
		{Name: "./system/instance-id.txt", Body: "i-1\n"},
		{Name: "./kubelet/kubelet.log", Body: incompressible(256 << 10)},
		{Name: "./var_log/big-unread.txt", Body: incompressible(256 << 10)},
	})
	for _, tc := range []struct {
		name string
		cut  int
		want string
	}{
		{"inside a scanned member", len(full) / 3, `truncated: it ends inside member "kubelet/kubelet.log"`},
		{"inside a skipped member", len(full) * 5 / 6, `truncated: it ends inside member "var_log/big-unread.txt"`},
		{"in the gzip header", 5, "truncated: it ends before the first member"},
		{"before the first member ends", 40, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := analyzeBytes(t, full[:tc.cut], Options{})
			if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestEvidenceEscapedAndClipped: kubelet log lines quoted as evidence cannot drive the reader's
// terminal (issue 10 item 1) and are cut on character boundaries (item 10). The finding keeps the
// line as written (issue 20 item 9): the text report escapes it, JSON carries the original.
func TestEvidenceEscapedAndClipped(t *testing.T) {
	hostile := "E0304 09:12:01.123 3121 pod_workers.go:1301] \"Error syncing pod\" err=\"\x1b]0;pwned\x07\x1b[2J ErrImagePull: \\\"pull QPS exceeded\\\"\" pod=\"default/app\u202e\u009b2J\x9b31m\""
	long := "E0304 \"pull QPS exceeded\" pod=\"" + strings.Repeat("日本語", 200) + "\""
	for _, tc := range []struct {
		name    string
		line    string
		shown   []string // in the text report
		clipped bool
	}{
		{name: "OSC title, clear screen, C1, bidi, invalid byte", line: hostile, shown: []string{`\x1b]0;pwned\x07\x1b[2J`, `\u202e\u009b2J\x9b31m`}},
		{name: "multibyte text cut on a rune boundary", line: long, clipped: true},
		{name: "escapes at the cut", line: "E0304 \"pull QPS exceeded\" " + strings.Repeat("\x1b", 400), clipped: true, shown: []string{`\x1b\x1b`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"kubelet/kubelet.log": tc.line + "\n"}
			rep := analyzeFiles(t, files, Options{})
			var ev string
			for _, f := range rep.Findings() {
				if f.Code == RulePullQPS.Code {
					ev = f.Evidence[0]
				}
			}
			if ev == "" {
				t.Fatal("no NK601 evidence")
			}
			// The finding keeps the line as written, cut on a character boundary.
			const prefix = "kubelet/kubelet.log:1: "
			body, ok := strings.CutPrefix(ev, prefix)
			if !ok {
				t.Fatalf("evidence = %q, want the prefix %q", ev, prefix)
			}
			if tc.clipped {
				cut, ok := strings.CutSuffix(body, "…")
				if !ok {
					t.Errorf("a long line is not marked as cut: %q", ev)
				}
				if !strings.HasPrefix(tc.line, cut) || !utf8.ValidString(cut) {
					t.Errorf("evidence %q is not the start of the line cut between characters", ev)
				}
				if len(body) > evidenceWidth {
					t.Errorf("evidence is %d bytes, above %d", len(body), evidenceWidth)
				}
			} else if body != tc.line {
				t.Errorf("evidence = %q, want the line as written %q", body, tc.line)
			}

			// The text report shows it escaped: no line reaches the terminal raw.
			text := findingstest.SafeText(t, "text", rep, findings.PrintOptions{Catalog: catalog})
			textcheck.Contains(t, "text report", text, tc.shown, nil)

			// JSON carries the original (an invalid byte decodes as U+FFFD), with no raw control.
			js := findingstest.SafeJSON(t, rep)
			textcheck.Contains(t, "JSON", string(js), nil, []string{`\\x1b`, `\\u202e`})
			var doc struct {
				Sections []struct {
					Findings []struct {
						Code     string
						Evidence []string
					}
				}
			}
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			var got string
			for _, s := range doc.Sections {
				for _, f := range s.Findings {
					if f.Code == RulePullQPS.Code {
						got = f.Evidence[0]
					}
				}
			}
			if want := strings.ToValidUTF8(ev, "\uFFFD"); got != want {
				t.Errorf("JSON evidence decodes to %q, want the original %q", got, want)
			}
		})
	}
}
