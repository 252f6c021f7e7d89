package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// servingCSRCheck reports kubelet-serving CSRs that never produced a certificate, by node: those
// nobody approved, and those approved but never signed. The second is what EKS does (since 1.24)
// with a request whose DNS or IP names it cannot verify against the EC2 instance, such as a
// hard-coded hostname: the request shows Approved, yet the kubelet still has no serving
// certificate.
//
// Only requests a kubelet sent count (NK721): user system:node:NAME in group system:nodes, the
// identity the Node authorizer gives a kubelet. Anyone else who may create CSRs can ask for a
// kubelet-serving certificate too; those requests name no node and are reported apart at info
// level (NK722), so they never fail a --fail-on warning gate.
type servingCSRCheck struct{}

func (servingCSRCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleServingCSRPending}, {Fact: FactCSRs, Rule: RuleServingCSRPending}}
}

// nodePrefix and nodesGroup are the kubelet's identity (the Node authorizer's).
const (
	nodePrefix = "system:node:"
	nodesGroup = "system:nodes"
)

// kubeletRequester returns the node a CSR's requester is, when it is a kubelet.
func kubeletRequester(c ServingCSR) (string, bool) {
	node, ok := strings.CutPrefix(c.Username, nodePrefix)
	if !ok || node == "" || !slices.Contains(c.Groups, nodesGroup) {
		return "", false
	}
	return node, true
}

func (servingCSRCheck) Run(f *Facts) Result {
	var r Result
	type pending struct {
		names    []string
		unsigned int // approved, no certificate
		oldest   time.Time
	}
	byNode := map[string]*pending{}
	foreign := map[string]*pending{}
	for _, c := range f.CSRs {
		if f.Now.Sub(c.Created) < f.Settings.CSRPendingAfter {
			continue
		}
		m, key := byNode, ""
		if node, ok := kubeletRequester(c); ok {
			key = node
		} else {
			m, key = foreign, c.Username
		}
		p := m[key]
		if p == nil {
			p = &pending{oldest: c.Created}
			m[key] = p
		}
		p.names = append(p.names, c.Name)
		if c.Approved {
			p.unsigned++
		}
		if c.Created.Before(p.oldest) {
			p.oldest = c.Created
		}
	}
	state := func(p *pending) string {
		sort.Strings(p.names)
		switch {
		case p.unsigned == len(p.names):
			return "approved but never signed"
		case p.unsigned > 0:
			return fmt.Sprintf("pending (%d approved but never signed)", p.unsigned)
		}
		return "pending"
	}
	known := map[string]int{}
	for i := range f.Nodes {
		known[f.Nodes[i].Name] = i
	}
	for _, node := range sortedKeys(byNode) {
		p := byNode[node]
		fd := RuleServingCSRPending.New("node/"+node, "%s %s, oldest %s: kubectl logs/exec and metrics to this node fail with \"no serving certificate available for the kubelet\"",
			plural(len(p.names), "kubelet-serving certificate request"), state(p), age(f.Now, p.oldest))
		fd = fd.WithEvidence("requests: " + textsafe.ClipRaw(strings.Join(p.names, ", "), 300))
		if i, ok := known[node]; ok {
			if hint := hostnameHint(&f.Nodes[i]); hint != "" {
				fd = fd.WithEvidence(hint)
			}
		} else {
			fd = fd.WithEvidence("no Node of this name: the kubelet registered under another name or its Node was deleted")
		}
		r.add(fd)
	}
	for _, user := range sortedKeys(foreign) {
		p := foreign[user]
		fd := RuleServingCSRForeign.New("user/"+textsafe.ClipRaw(user, 100), "%s %s, oldest %s, from a requester that is not a kubelet (not %sNAME in group %s): no node waits for it",
			plural(len(p.names), "kubelet-serving certificate request"), state(p), age(f.Now, p.oldest), nodePrefix, nodesGroup)
		r.add(fd.WithEvidence("requests: " + textsafe.ClipRaw(strings.Join(p.names, ", "), 300)))
	}
	return r
}
