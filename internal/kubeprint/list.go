package kubeprint

import (
	"bytes"
	"io"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// LeaseGroupResource is how kubectl names a lease in -o name and --show-kind output.
const LeaseGroupResource = "lease.coordination.k8s.io"

// PrintLeases prints leases through p as `kubectl get lease` prints a listing: one List
// (apiVersion v1, kind List) whose items are coordination.k8s.io/v1 Lease objects, without
// managedFields (kubectl hides them by default). The leases are modified in place (TypeMeta set,
// managedFields dropped).
//
// The text of JSONPath and Go template output keeps its newlines and tabs (a template's own
// layout) but every other character a terminal could act on is escaped, since any field of a
// Lease is written by somebody else; names, which are DNS names, print exactly as kubectl's.
// jsonpath-as-json output is JSON, which escapes by itself.
func PrintLeases(w io.Writer, p printers.ResourcePrinter, format string, leases []coordinationv1.Lease) error {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: make([]runtime.RawExtension, len(leases))}
	for i := range leases {
		l := &leases[i]
		l.APIVersion, l.Kind = coordinationv1.SchemeGroupVersion.String(), "Lease"
		l.ManagedFields = nil
		list.Items[i].Object = l
	}
	name, _, _ := strings.Cut(format, "=")
	if name == "name" {
		// cli-runtime's name printer takes one object at a time, as kubectl calls it.
		for i := range leases {
			if err := p.PrintObj(&leases[i], w); err != nil {
				return err
			}
		}
		return nil
	}
	if name == "custom-columns" || name == "jsonpath-as-json" {
		// Names are validated DNS names; custom-columns escapes each cell; JSON escapes itself.
		return p.PrintObj(list, w)
	}
	var buf bytes.Buffer
	if err := p.PrintObj(list, &buf); err != nil {
		return err
	}
	_, err := io.WriteString(w, escapeKeepingLayout(buf.String()))
	return err
}

// escapeKeepingLayout is textsafe.Escape for every piece between newlines and tabs.
func escapeKeepingLayout(s string) string {
	if textsafe.Safe(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		cells := strings.Split(line, "\t")
		for j := range cells {
			cells[j] = textsafe.Escape(cells[j])
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

// Name is the name of a lease as kubectl prints it with --show-kind.
func Name(name string, showKind bool) string {
	if showKind {
		return LeaseGroupResource + "/" + name
	}
	return name
}
