package leasesview

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// TestStreamingMatchesPrinters: the item-at-a-time writers produce the very bytes of
// cli-runtime's JSON and YAML printers (kubectl's), for reports of every shape.
func TestStreamingMatchesPrinters(t *testing.T) {
	odd := fixtureReport(fixedOptions())
	odd.Items[0].Reason = "line one\nline two: with \"quotes\", <html> & \t tab\n    items: []\n\"items\": []"
	odd.Items[1].Holder = ptr.To("  leading spaces and ünïcödé ")
	odd.Items[2].Reason = "- looks like a list\n  - nested"
	noCandidates := fixtureReport(fixedOptions())
	noCandidates.LeaseCandidates, noCandidates.LeaseCandidateAPI = nil, ""
	onlyNS := fixedOptions()
	onlyNS.Namespace, onlyNS.Classes = "kube-system", []lease.Class{lease.Unowned}
	reports := map[string]*Report{
		"fixture":         fixtureReport(fixedOptions()),
		"odd strings":     odd,
		"no candidates":   noCandidates,
		"no items":        fixtureReport(onlyNS),
		"no items at all": Build(nil, nil, fixedOptions()),
		"one item":        func() *Report { r := fixtureReport(fixedOptions()); r.Items = r.Items[:1]; return r }(),
	}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			for _, f := range []struct {
				format  string
				printer printers.ResourcePrinter
			}{{FormatJSON, &printers.JSONPrinter{}}, {FormatYAML, &printers.YAMLPrinter{}}} {
				var want, got bytes.Buffer
				if err := f.printer.PrintObj(r, &want); err != nil {
					t.Fatal(err)
				}
				if err := Print(&got, r, PrintOptions{Format: f.format}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("-o %s differs from the cli-runtime printer:\n--- got\n%s\n--- want\n%s", f.format, got.String(), want.String())
				}
			}
		})
	}
}

func TestWatchPrinterYAMLDocuments(t *testing.T) {
	r := fixtureReport(fixedOptions())
	var out bytes.Buffer
	p := NewWatchPrinter(&out, PrintOptions{Format: FormatYAML})
	if err := p.Snapshot(r); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := p.Change(&Change{TypeMeta: newTypeMeta(ChangeKind), Type: Deleted, Time: r.GeneratedAt, From: lease.Zombie, Item: r.Items[2]}); err != nil {
			t.Fatal(err)
		}
	}
	docs := strings.Split(out.String(), "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("want 3 YAML documents, got %d:\n%s", len(docs), out.String())
	}
	var back Report
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &back); err != nil || len(back.Items) != len(r.Items) {
		t.Fatalf("snapshot document: %v (%d items)", err, len(back.Items))
	}
	for _, d := range docs[1:] {
		var c Change
		if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil || c.Kind != ChangeKind || c.Type != Deleted || c.Item.Name != r.Items[2].Name {
			t.Fatalf("change document: %v %+v", err, c)
		}
	}
}
