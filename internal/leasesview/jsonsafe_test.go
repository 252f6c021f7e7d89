package leasesview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// TestJSONEscapesTerminalControls: `leases -o json` and `leases --watch -o json` write a holder's
// C1 (U+009B, U+0085) and bidi (U+202E) characters as \u escapes, which encoding/json leaves raw;
// the document still decodes to the holder as written.
func TestJSONEscapesTerminalControls(t *testing.T) {
	const holder = "tenant\u009b2J\u0085\u202eevil\x1b]0;t\a"
	r := fixtureReport(fixedOptions())
	r.Items[0].Holder = ptr.To(holder)
	check := func(what string, out []byte) {
		t.Helper()
		for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if !textsafe.Safe(line) {
				t.Errorf("%s: line %d holds a raw control: %q", what, i+1, line)
			}
		}
		if !strings.Contains(string(out), `tenant\u009b2J\u0085\u202eevil\u001b]0;t\u0007`) {
			t.Errorf("%s lacks the escaped holder:\n%s", what, out)
		}
		if !strings.Contains(string(out), `"holderIdentity": "tenant`) {
			t.Fatalf("%s: no holderIdentity field", what)
		}
	}
	var list bytes.Buffer
	if err := Print(&list, r, PrintOptions{Format: FormatJSON}); err != nil {
		t.Fatal(err)
	}
	check("-o json", list.Bytes())
	var back Report
	if err := json.Unmarshal(list.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(back.Items[0].Holder, ""); got != holder {
		t.Errorf("decoded holder %q, want %q", got, holder)
	}

	var watch bytes.Buffer
	p := NewWatchPrinter(&watch, PrintOptions{Format: FormatJSON})
	if err := p.Change(&Change{TypeMeta: newTypeMeta(ChangeKind), Type: Modified, Time: r.GeneratedAt, Item: r.Items[0]}); err != nil {
		t.Fatal(err)
	}
	check("--watch -o json", watch.Bytes())
}
