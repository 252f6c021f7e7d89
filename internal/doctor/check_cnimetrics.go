package doctor

import "github.com/nodekeeper/nodekeeper/internal/findings"

// cniMetricsCheck reports, per node, what its ipamd counted since it started: EC2 API errors by
// code (NK742, a warning when EC2 refuses ipamd's permissions), its own failures and the pod
// address requests it had no address for (NK748), each with the node's address pool; and the
// nodes whose metrics could not be read (NK741, skipped, with why).
type cniMetricsCheck struct{}

func (cniMetricsCheck) Needs() []Need {
	return []Need{{Fact: FactCNIMetrics, Rule: RuleCNIMetricsUnavailable}}
}

// codeUnauthorized is EC2's answer when the caller's role lacks the action.
const codeUnauthorized = "UnauthorizedOperation"

func (cniMetricsCheck) Run(f *Facts) Result {
	var r Result
	for _, node := range sortedKeys(f.CNI.Nodes) {
		c := f.CNI.Nodes[node]
		res := "node/" + node
		if c.Ready && c.Metrics == nil {
			r.add(RuleCNIMetricsUnavailable.Skip(res, "aws-node pod "+c.Pod+": "+c.Err))
			continue
		}
		m := c.Metrics
		if m == nil {
			continue // not Ready: judged with the stuck pods, if any
		}
		r.checked(SectionCNIMetrics, 1)
		if len(m.EC2Errors) > 0 {
			sev := RuleCNIEC2Errors.Severity
			if m.EC2Errors[codeUnauthorized] > 0 {
				sev = findings.Warning
			}
			r.add(RuleCNIEC2Errors.At(sev, res, "ipamd (%s) counted EC2 API errors since it started: %s", c.Pod, countsText(m.EC2Errors)).WithEvidence(m.PoolText()))
		}
		if len(m.IPAMDErrors) > 0 || m.NoAddress > 0 {
			msg := "ipamd (" + c.Pod + ")"
			if m.NoAddress > 0 {
				msg += " had no address for " + plural(m.NoAddress, "pod address request")
			}
			if len(m.IPAMDErrors) > 0 {
				if m.NoAddress > 0 {
					msg += ";"
				}
				msg += " counted failures: " + countsText(m.IPAMDErrors)
			}
			r.add(RuleCNIIPAMDErrors.New(res, "%s", msg).WithEvidence(m.PoolText()))
		}
	}
	return r
}
