package kubeprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"
)

func testLeases() []coordinationv1.Lease {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(name, holder string, renewed time.Duration, dur int32) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(dur),
				RenewTime: &metav1.MicroTime{Time: t0.Add(renewed)}},
		}
	}
	return []coordinationv1.Lease{
		mk("b-node", "b-node", -time.Minute, 40),
		mk("a-node", "evil\x1b]0;owned\x07", -time.Hour, 100),
		mk("c-node", "c-node", -time.Second, 9),
	}
}

func TestObjectFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  Flags
		want   string
		wantIn []string
	}{
		{name: "name", flags: Flags{Output: "name"},
			want: "lease.coordination.k8s.io/b-node\nlease.coordination.k8s.io/a-node\nlease.coordination.k8s.io/c-node\n"},
		{name: "jsonpath over the List", flags: Flags{Output: "jsonpath={.items[*].metadata.name}"},
			want: "b-node a-node c-node"},
		{name: "jsonpath escapes control characters but keeps the template's newlines",
			flags: Flags{Output: `jsonpath={range .items[*]}{.spec.holderIdentity}{"\n"}{end}`},
			want:  "b-node\nevil\\x1b]0;owned\\x07\nc-node\n"},
		{name: "--template with -o go-template", flags: Flags{Output: "go-template", Template: `{{range .items}}{{.kind}} {{.metadata.name}}{{"\n"}}{{end}}`},
			want: "Lease b-node\nLease a-node\nLease c-node\n"},
		{name: "custom-columns, escaped cells, <none> for missing", flags: Flags{Output: "custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,PREF:.spec.preferredHolder"},
			want: "NAME     HOLDER                 PREF\nb-node   b-node                 <none>\na-node   evil\\x1b]0;owned\\x07   <none>\nc-node   c-node                 <none>\n"},
		{name: "custom-columns --no-headers", flags: Flags{Output: "custom-columns=N:metadata.name", NoHeaders: true},
			want: "b-node\na-node\nc-node\n"},
		{name: "jsonpath-as-json has no managedFields and is typed", flags: Flags{Output: "jsonpath-as-json={.items[0]}"},
			wantIn: []string{`"kind": "Lease"`, `"apiVersion": "coordination.k8s.io/v1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.flags
			if !f.AllowMissingTemplateKeys {
				f.AllowMissingTemplateKeys = true
			}
			if !f.ObjectFormat() {
				t.Fatalf("-o %q is not an object format", f.Output)
			}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			p, err := f.ObjectPrinter()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := PrintLeases(&b, p, f.Output, testLeases()); err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(b.String(), s) {
					t.Errorf("output lacks %s:\n%s", s, b.String())
				}
			}
			if strings.Contains(b.String(), "managedFields") || strings.Contains(b.String(), "\x1b") {
				t.Errorf("managed fields or a raw escape in the output:\n%q", b.String())
			}
		})
	}
}

func TestNotObjectFormats(t *testing.T) {
	for _, o := range []string{"", "wide", "json", "yaml", "table", "report"} {
		if (&Flags{Output: o}).ObjectFormat() {
			t.Errorf("-o %q taken for an object format", o)
		}
	}
	if !(&Flags{Template: "{{.}}"}).ObjectFormat() {
		t.Error("--template without -o is not go-template")
	}
}

func TestValidateRejects(t *testing.T) {
	for _, f := range []Flags{
		{Output: "jsonpath={.items[*"},
		{Output: "jsonpath"},
		{Output: "go-template={{.x"},
		{Output: "custom-columns"},
		{Output: "custom-columns=NAME"},
		{Output: "custom-columns=NAME:.metadata.name,:.x"},
		{Output: "name", SortBy: "{.metadata.name"},
	} {
		if err := f.Validate(); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
}

func TestSortBy(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"{.metadata.name}", "a-node b-node c-node"},
		{".spec.renewTime", "a-node b-node c-node"},
		{"spec.leaseDurationSeconds", "c-node b-node a-node"},
		{".spec.preferredHolder", "b-node a-node c-node"}, // absent everywhere: order kept
	} {
		ls := testLeases()
		err := SortBy(tc.expr, len(ls), func(i int) (any, error) {
			b, _ := json.Marshal(&ls[i])
			var v any
			return v, json.Unmarshal(b, &v)
		}, func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range ls {
			names = append(names, l.Name)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("--sort-by %s: %s, want %s", tc.expr, got, tc.want)
		}
	}
}

// kubectlPrinter is the printer kubectl's print flags (cli-runtime's genericclioptions, which the
// CLI no longer links) choose for the same flags: the reference templatePrinter is held to.
func kubectlPrinter(f Flags) (printers.ResourcePrinter, error) {
	pf := genericclioptions.NewPrintFlags("")
	output := f.Output
	pf.OutputFormat = &output
	tf := pf.TemplatePrinterFlags
	tf.TemplateArgument, tf.AllowMissingKeys = &f.Template, &f.AllowMissingTemplateKeys
	tf.GoTemplatePrintFlags.TemplateArgument, tf.GoTemplatePrintFlags.AllowMissingKeys = &f.Template, &f.AllowMissingTemplateKeys
	tf.JSONPathPrintFlags.TemplateArgument, tf.JSONPathPrintFlags.AllowMissingKeys = &f.Template, &f.AllowMissingTemplateKeys
	pf.OutputFlagSpecified = func() bool { return output != "" }
	return pf.ToPrinter()
}

// TestObjectPrinterIsKubectls: for every object format, with and without --template, with
// template files, missing keys and bad templates, ObjectPrinter prints what kubectl's own print
// flags print, or fails with kubectl's message.
func TestObjectPrinterIsKubectls(t *testing.T) {
	dir := t.TempDir()
	goFile := filepath.Join(dir, "names.tmpl")
	pathFile := filepath.Join(dir, "names.jsonpath")
	if err := os.WriteFile(goFile, []byte(`{{range .items}}{{.metadata.name}}{{"\n"}}{{end}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pathFile, []byte(`{.items[*].metadata.name}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	goTmpl, pathTmpl := `{{range .items}}{{.metadata.name}} {{.spec.holderIdentity}}{{"\n"}}{{end}}`, `{.items[*].metadata.name}`
	missingKey := `{{range .items}}{{.spec.nothing}}{{end}}`
	var cases []Flags
	for _, allow := range []bool{true, false} {
		for _, f := range []Flags{
			{Output: "name"},
			{Output: "NAME"},
			{Output: "name", Template: goTmpl},
			{Output: "name=x"},
			{Output: "jsonpath=" + pathTmpl},
			{Output: "jsonpath-as-json=" + pathTmpl},
			{Output: "jsonpath-as-json={.items[0]}"},
			{Output: "jsonpath-file=" + pathFile},
			{Output: "jsonpath-file=" + missing},
			{Output: "jsonpath", Template: pathTmpl},
			{Output: "jsonpath"},
			{Output: "jsonpath={.items[*"},
			{Output: "jsonpath={.items[*].spec.nothing}"},
			{Output: "jsonpath=" + pathTmpl, Template: pathTmpl},
			{Output: "go-template=" + goTmpl},
			{Output: "go-template=" + missingKey},
			{Output: "go-template={{.x"},
			{Output: "go-template", Template: goTmpl},
			{Output: "go-template"},
			{Output: "template=" + goTmpl},
			{Output: "templatefile=" + goFile},
			{Output: "go-template-file=" + goFile},
			{Output: "go-template-file", Template: goFile},
			{Output: "go-template-file=" + missing},
			{Template: goTmpl},
			{Template: missingKey},
			{Output: "go-template=" + goTmpl, Template: goTmpl},
		} {
			f.AllowMissingTemplateKeys = allow
			cases = append(cases, f)
		}
	}
	for _, f := range cases {
		t.Run(fmt.Sprintf("%s|%s|%v", f.Output, f.Template, f.AllowMissingTemplateKeys), func(t *testing.T) {
			print := func(p printers.ResourcePrinter, err error) string {
				if err != nil {
					return "error: " + err.Error()
				}
				var b bytes.Buffer
				if err := PrintLeases(&b, p, f.Output, testLeases()); err != nil {
					return "print error: " + err.Error()
				}
				return b.String()
			}
			got, want := print(f.templatePrinter()), print(kubectlPrinter(f))
			if got != want {
				t.Errorf("ours:\n%s\nkubectl's:\n%s", got, want)
			}
		})
	}
}
