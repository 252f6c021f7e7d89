package bundle

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// countedReader counts the bytes taken from r.
type countedReader struct {
	r io.Reader
	n int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestJournalAboveTheCapIsPartial: a 12 MB gzip journal of matching lines inflated to the 2 GiB
// cap and gave nothing but an error. It now gives the findings of what was read before the cap,
// marked as partial in the report (text and JSON). The cap is lowered to 1 MiB so that a
// bomb of a few MB proves it: the lines counted and the compressed bytes taken show that the
// reader stopped at the cap.
func TestJournalAboveTheCapIsPartial(t *testing.T) {
	const maxMember = 1 << 20
	line := `Mar 04 09:12:01 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:12:01.123 3121 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"app\" with ErrImagePull: \"pull QPS exceeded\"" pod="default/app"` + "\n"
	journal := strings.Repeat(line, 4*maxMember/len(line)+1) // 4 MiB
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	_, _ = zw.Write([]byte(journal))
	_ = zw.Close()
	bomb := zb.Bytes()
	// At most the cap is checked: whole lines before it, and the line it cuts.
	maxLines := maxMember/len(line) + 1

	for _, tc := range []struct {
		name string
		data []byte
		flag string
	}{
		{"gzip", bomb, "--max-member-size"},
		{"plain", []byte(journal), "--max-member-size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countedReader{r: bytes.NewReader(tc.data)}
			rep, err := Analyze(src, "kubelet.journal.gz", Options{Now: testNow, Limits: Limits{MaxMemberSize: maxMember}})
			if err != nil {
				t.Fatalf("no report for a journal above the cap: %v", err)
			}
			if src.n >= int64(len(tc.data)) {
				t.Errorf("the whole input was read (%d bytes)", src.n)
			}
			want := fmt.Sprintf("is longer than %d bytes (%s): the first %d lines were checked", maxMember, tc.flag, maxLines)
			if !strings.Contains(rep.Partial, want) {
				t.Fatalf("partial = %q, want %q", rep.Partial, want)
			}
			f := findCode(t, rep, "NK601")
			if !strings.HasPrefix(f.Message, fmt.Sprint(maxLines-1)+" ") && !strings.HasPrefix(f.Message, fmt.Sprint(maxLines)+" ") {
				t.Errorf("NK601: %s (want %d lines, those before the cap)", f.Message, maxLines)
			}
			var text bytes.Buffer
			if err := findings.PrintText(&text, rep, findings.PrintOptions{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "\npartial: the journal \"kubelet.journal.gz\" is longer than") {
				t.Errorf("text report without a partial line:\n%s", text.String())
			}
			var js bytes.Buffer
			if err := findings.PrintJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, "BundleReport", js.Bytes())
			var doc struct {
				Partial       bool   `json:"partial"`
				PartialReason string `json:"partialReason"`
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil || !doc.Partial || doc.PartialReason != rep.Partial {
				t.Errorf("JSON partial = %v %q (%v)", doc.Partial, doc.PartialReason, err)
			}
		})
	}

	// A journal of exactly the cap is whole.
	exact := journal[:maxMember/len(line)*len(line)]
	rep, err := Analyze(strings.NewReader(exact), "kubelet.journal", Options{Now: testNow, Limits: Limits{MaxMemberSize: int64(len(exact))}})
	if err != nil || rep.Partial != "" {
		t.Fatalf("a journal of exactly the cap: partial %q, err %v", rep.Partial, err)
	}
	var js bytes.Buffer
	if err := findings.PrintJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js.Bytes(), []byte(`"partial"`)) {
		t.Error("a whole report says partial")
	}
}
