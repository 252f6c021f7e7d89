package maxpods

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// Each result's title line ("m5.large: max pods 29") and the labels of its lines ("IP limit:")
// carry no Go identifier, fmt error or dump, in every mode.
func TestHeadingsAreForPeople(t *testing.T) {
	for _, opts := range []Options{{}, {Options: eni.Options{PrefixDelegation: true}}, {Options: eni.Options{CustomNetworking: true}}} {
		o := opts
		o.Output = "text"
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := o.Run(context.Background(), &out, io.Discard, []string{"m5.large", "t3.micro", "c5.18xlarge"}); err != nil {
			t.Fatal(err)
		}
		hs := headings.Text(out.String())
		for _, l := range strings.Split(out.String(), "\n") {
			if label, _, ok := strings.Cut(l, ":"); ok && strings.HasPrefix(l, "  ") {
				hs = append(hs, strings.TrimSpace(label))
			}
		}
		if len(hs) < 3*5 {
			t.Fatalf("%d headings in\n%s", len(hs), out.String())
		}
		headings.Check(t, "maxpods text", hs)
	}
}
