package clusterread

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestProxyFailureClipsOnCharacters: a failed request's error through the node or pod proxy (a proxy's page, a
// kubelet's message in any language) is cut to 200 characters without splitting a character, and
// kept as written: it becomes a finding's message, which the printers escape.
func TestProxyFailureClipsOnCharacters(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tc := range []struct {
		name   string
		err    error
		prefix string
	}{
		{"plain error", errors.New("dial tcp: " + long), "dial tcp: éé"},
		{"API status", apierrors.NewServiceUnavailable("kubelet says " + long), "HTTP 503: kubelet says éé"},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n\x1b[2J"), `HTTP 404: nodes "n\x1b[2J" not found`},
		{"raw escape", errors.New("proxy: \x1b]0;x\a" + long), "proxy: \x1b]0;x\aéé"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProxyFailure(tc.err)
			if !utf8.ValidString(got) {
				t.Fatalf("ProxyFailure = %q: a character was cut", got)
			}
			if n := utf8.RuneCountInString(got); n > 200 {
				t.Errorf("ProxyFailure is %d characters, want at most 200", n)
			}
			if !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("ProxyFailure = %q, want prefix %q", got, tc.prefix)
			}
		})
	}
}
