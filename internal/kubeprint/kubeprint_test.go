package kubeprint

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
