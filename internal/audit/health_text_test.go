package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
)

// The lease churn and heartbeat sections show the actor's name, user agent and source IP and the
// node's name escaped, like every other section: a churning actor with a hostile name deletes a
// lease with a hostile name six times, and that node's kubelet has a 50 s gap of 429s.
func TestHealthSectionsEscapeHostileStrings(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			s := h.inLog()
			node, user, ua, ip := "ip-"+s, "cleaner"+s, "kubectl"+s, "10.0.0.1"+s
			kubelet := map[string]any{"username": "system:node:" + node}
			lease := map[string]any{"resource": "leases", "namespace": analyze.NodeLeaseNamespace, "name": node,
				"apiGroup": "coordination.k8s.io", "apiVersion": "v1"}
			code := func(c int) map[string]any { return map[string]any{"code": c} }
			var lines []string
			for i := 0; i < 30; i++ {
				at := time.Duration(i) * 10 * time.Second
				c := 200
				if i >= 10 && i < 15 {
					c = 429 // a gap of 60 s: over the grace period
				}
				lines = append(lines, hostileEvent(t, at, map[string]any{"verb": "update", "user": kubelet, "userAgent": "kubelet/v1.28.3",
					"objectRef": lease, "responseStatus": code(c)}))
				if i >= 20 && i < 26 {
					lines = append(lines,
						hostileEvent(t, at+time.Second, map[string]any{"verb": "delete", "user": map[string]any{"username": user},
							"userAgent": ua, "sourceIPs": []string{ip}, "objectRef": lease, "responseStatus": code(200)}),
						hostileEvent(t, at+2*time.Second, map[string]any{"verb": "create", "user": kubelet, "userAgent": "kubelet/v1.28.3",
							"objectRef": lease, "responseStatus": code(201)}))
				}
			}
			r, err := analyze.AnalyzeReader("input", strings.NewReader(strings.Join(lines, "\n")), analyze.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.LeaseChurn.Actors) != 1 || r.Heartbeats.OverGrace != 1 {
				t.Fatalf("the hostile events did not reach both sections: churn %+v, heartbeats %+v", r.LeaseChurn, r.Heartbeats)
			}
			text := safeText(t, r)
			churn := text[strings.Index(text, "LEASE CHURN"):strings.Index(text, "HEARTBEATS")]
			beats := text[strings.Index(text, "HEARTBEATS"):strings.Index(text, "LEASE LIFECYCLES")]
			for _, want := range []struct{ section, s string }{{churn, user}, {churn, ip}, {beats, node}} {
				if w := shown(want.s); !strings.Contains(want.section, w) {
					t.Errorf("%q is not shown escaped in its section:\n%s", w, want.section)
				}
			}
		})
	}
}
