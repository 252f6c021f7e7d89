package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// This file holds the pure part of the "Pod networking" section: what is kept of each pod and
// event while the lists stream past (a few fields, so memory stays bounded by the stuck pods and
// the node count, not by the cluster's pods and events), and the findings built from it.

// maxSandboxMessage bounds one sandbox failure message kept as evidence (runes, as written).
const maxSandboxMessage = 400

// maxPodsPerFinding bounds the pods named in one finding's evidence; the count is always exact.
const maxPodsPerFinding = 5

// StuckPod is a pod that waits in ContainerCreating on a node.
type StuckPod struct {
	Namespace, Name, Node string
	// Since is when the pod was scheduled (or created, when the condition is missing).
	Since time.Time
	// Cause of its newest FailedCreatePodSandBox event (CauseNoEvent without one).
	Cause SandboxCause
	// Message of that event, clipped, as written; Events the number of failures it counted.
	Message string
	Events  int32
	newest  time.Time
}

// containerCreating reports whether a pod's sandbox or containers are still being created: the
// kubelet reports every container (and init container) as waiting with reason ContainerCreating
// until the sandbox exists (PodInitializing for app containers behind init containers).
func containerCreating(p *corev1.Pod) bool {
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason == "ContainerCreating" {
			return true
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason == "ContainerCreating" {
			return true
		}
	}
	return false
}

// scheduledAt is when a pod was bound to its node, from its PodScheduled condition.
func scheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// holdsVPCAddress reports whether a pod uses one of its node's VPC addresses: every pod on a
// node except host-network pods, once it has an IP (a pod stuck before it got one holds none).
func holdsVPCAddress(p *corev1.Pod) bool {
	return !p.Spec.HostNetwork && p.Status.PodIP != "" && p.Spec.NodeName != ""
}

// podNetState gathers what the pod and event lists contribute.
type podNetState struct {
	now        time.Time
	stuckAfter time.Duration
	// vpcPods counts pods holding VPC addresses per node.
	vpcPods map[string]int
	// stuck pods by namespace/name.
	stuck map[string]*StuckPod
}

func newPodNetState(now time.Time, stuckAfter time.Duration) *podNetState {
	return &podNetState{now: now, stuckAfter: stuckAfter, vpcPods: map[string]int{}, stuck: map[string]*StuckPod{}}
}

// addPod takes one pod of a list page.
func (s *podNetState) addPod(p *corev1.Pod) {
	if holdsVPCAddress(p) {
		s.vpcPods[p.Spec.NodeName]++
	}
	if p.Status.Phase != corev1.PodPending || p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !containerCreating(p) {
		return
	}
	since := scheduledAt(p)
	if s.now.Sub(since) < s.stuckAfter {
		return
	}
	s.stuck[p.Namespace+"/"+p.Name] = &StuckPod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Since: since, Cause: CauseNoEvent}
}

// addEvent takes one FailedCreatePodSandBox event; events of pods that are not stuck are dropped.
func (s *podNetState) addEvent(e *corev1.Event) {
	if e.InvolvedObject.Kind != "Pod" {
		return
	}
	sp := s.stuck[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name]
	if sp == nil {
		return
	}
	n, at := occurrences(e)
	sp.Events += n
	if sp.Cause == CauseNoEvent || !at.Before(sp.newest) {
		sp.newest = at
		sp.Cause = ClassifySandboxMessage(e.Message)
		sp.Message = clipHead(e.Message, maxSandboxMessage)
	}
}

// occurrences is how many times an event happened and when last, wherever the recorder put them:
// count and lastTimestamp of a core/v1 recorder, eventTime, or an events.k8s.io series.
func occurrences(e *corev1.Event) (n int32, last time.Time) {
	last = e.LastTimestamp.Time
	if !e.EventTime.IsZero() && e.EventTime.Time.After(last) {
		last = e.EventTime.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.Time.After(last) {
		last = e.Series.LastObservedTime.Time
	}
	n = max(e.Count, 1)
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	return n, last
}

// causeRules maps causes to their rules.
var causeRules = map[SandboxCause]findings.Rule{
	CauseIPAMNoAddress:    RuleSandboxNoAddress,
	CauseSubnetExhausted:  RuleSandboxSubnetExhausted,
	CauseIPAMDUnreachable: RuleSandboxIPAMDUnreachable,
	CauseEC2Throttled:     RuleSandboxEC2Throttled,
	CauseOther:            RuleSandboxOther,
	CauseNoEvent:          RuleStuckNoEvent,
}

// causeOrder is the display order of the causes.
var causeOrder = []SandboxCause{CauseIPAMNoAddress, CauseSubnetExhausted, CauseIPAMDUnreachable, CauseEC2Throttled, CauseOther, CauseNoEvent}

func age(now, since time.Time) string {
	d := now.Sub(since)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// sortStuck orders pods oldest first, then by name, so output is stable.
func sortStuck(ps []*StuckPod) {
	sort.Slice(ps, func(i, j int) bool {
		if !ps[i].Since.Equal(ps[j].Since) {
			return ps[i].Since.Before(ps[j].Since)
		}
		return ps[i].Namespace+"/"+ps[i].Name < ps[j].Namespace+"/"+ps[j].Name
	})
}

func podList(now time.Time, ps []*StuckPod) []string {
	var out []string
	for i, p := range ps {
		if i == maxPodsPerFinding {
			out = append(out, "... and "+plural(len(ps)-i, "more pod"))
			break
		}
		out = append(out, fmt.Sprintf("pod %s/%s on %s stuck %s", p.Namespace, p.Name, p.Node, age(now, p.Since)))
	}
	return out
}

// NodeAddressInfo is what the capacity comparison needs about one node.
type NodeAddressInfo struct {
	Node *corev1.Node
	// Capacity is the capacity check's result for the node (Evaluated false: unknown).
	Capacity rules.CapacityResult
	// CustomNetworking as used for the capacity.
	CustomNetworking bool
	// ModeText describes the address mode ("custom networking", ...).
	ModeText string
}

// stuckFindings turns the gathered pods into the section's findings: per cause and node, per
// namespace, and per node at its address capacity. The groups name the cause measured on their
// nodes (measured, from stuckCauses; empty when ipamd's figures were not read), pointing at the
// node's own finding for the figures and the fix.
func stuckFindings(now time.Time, s PodFacts, nodes map[string]NodeAddressInfo, measured map[string]nodeCause) []findings.Finding {
	var out []findings.Finding
	byCauseNode := map[SandboxCause]map[string][]*StuckPod{}
	byNS := map[string][]*StuckPod{}
	byNode := map[string][]*StuckPod{}
	for _, p := range s.Stuck {
		if byCauseNode[p.Cause] == nil {
			byCauseNode[p.Cause] = map[string][]*StuckPod{}
		}
		byCauseNode[p.Cause][p.Node] = append(byCauseNode[p.Cause][p.Node], p)
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	for _, c := range causeOrder {
		rule := causeRules[c]
		nodeNames := sortedKeys(byCauseNode[c])
		for _, n := range nodeNames {
			ps := byCauseNode[c][n]
			sortStuck(ps)
			var events int32
			for _, p := range ps {
				events += p.Events
			}
			msg := fmt.Sprintf("%s stuck in ContainerCreating (%s), oldest %s/%s for %s",
				plural(len(ps), "pod"), c, ps[0].Namespace, ps[0].Name, age(now, ps[0].Since))
			if c != CauseNoEvent {
				msg += ", " + plural(int(events), "sandbox failure")
			}
			f := rule.New("node/"+n, "%s", msg)
			if m, ok := measured[n]; ok {
				f = f.WithEvidence(fmt.Sprintf("measured on the node: %s (%s)", stuckCauseNames[m.Rule.Code], m.Rule.Code))
			}
			if c != CauseNoEvent && ps[0].Message != "" {
				f = f.WithEvidence("newest message: " + ps[0].Message)
			}
			out = append(out, f.WithEvidence(podList(now, ps)...))
		}
	}
	for _, ns := range sortedKeys(byNS) {
		ps := byNS[ns]
		sortStuck(ps)
		causes := map[SandboxCause]int{}
		nodesSeen := map[string]bool{}
		for _, p := range ps {
			causes[p.Cause]++
			nodesSeen[p.Node] = true
		}
		var parts []string
		for _, c := range causeOrder {
			if causes[c] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", string(c), causes[c]))
			}
		}
		f := RuleStuckByNamespace.New("namespace/"+ns, "%s stuck on %s (%s), oldest %s for %s",
			plural(len(ps), "pod"), plural(len(nodesSeen), "node"), strings.Join(parts, ", "), ps[0].Name, age(now, ps[0].Since))
		if line := measuredSummary(nodesSeen, measured); line != "" {
			f = f.WithEvidence(line)
		}
		out = append(out, f)
	}
	for _, n := range sortedKeys(byNode) {
		info, ok := nodes[n]
		if !ok || !info.Capacity.Evaluated {
			continue
		}
		addresses := info.Capacity.IPLimit - eni.HostNetworkPods
		used := s.VPCPods[n]
		maxPods := int(info.Node.Status.Capacity.Pods().Value())
		if used < addresses || maxPods <= info.Capacity.IPLimit {
			continue
		}
		f := RuleNodeAtAddressCapacity.New("node/"+n,
			"%s hold VPC addresses and %s (%s) has %d for pods, but the kubelet admits %d pods (maxPods): %s stuck in ContainerCreating",
			plural(used, "pod"), instanceType(info.Node), info.ModeText, addresses, maxPods, plural(len(byNode[n]), "pod"))
		out = append(out, f.WithEvidence(nodeMaxPodsFix(info.Node, info.Capacity.IPLimit, info.CustomNetworking)))
	}
	return out
}

// measuredSummary counts the nodes by their measured cause: "measured causes: 3 nodes pool full
// at maxPods (NK743), 1 node subnet out of free addresses (NK744)", in rule order; "" when no node
// has one.
func measuredSummary(nodes map[string]bool, measured map[string]nodeCause) string {
	byCode := map[string]int{}
	for n := range nodes {
		if m, ok := measured[n]; ok {
			byCode[m.Rule.Code]++
		}
	}
	var parts []string
	for _, code := range sortedKeys(byCode) {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", plural(byCode[code], "node"), stuckCauseNames[code], code))
	}
	if len(parts) == 0 {
		return ""
	}
	return "measured causes: " + strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// plural writes "1 pod", "2 pods".
func plural(n int, noun string) string {
	return findings.Noun{One: noun, Many: noun + "s"}.Count(n)
}

// clipHead keeps the end of a long message, where the CNI plugin's own error sits behind the
// kubelet's, the runtime's and libcni's prefixes: at most max runes, starting with "…" when
// anything was cut, cut only between characters (a byte that is not valid UTF-8 counts as one).
// The text is kept as written; the printers escape it.
func clipHead(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if max < 1 || n <= max {
		return s
	}
	skip := n - (max - 1)
	for i := range s {
		if skip == 0 {
			return "…" + s[i:]
		}
		skip--
	}
	return "…"
}
