package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Result is the plan under today's aws-node settings and, when settings were changed (--set,
// --prefix-delegation), the same plan under the changed ones beside it.
type Result struct {
	Today *Plan `json:"today"`
	// Changes are the aws-node variables changed for WhatIf ("" removes one).
	Changes map[string]string `json:"changes,omitempty"`
	WhatIf  *Plan             `json:"whatIf,omitempty"`
	// Fits is the verdict of the plan that would run: WhatIf when there is one, else Today.
	Fits bool `json:"fits"`
	// Notes say what could not be read and what was assumed instead.
	Notes []string `json:"notes,omitempty"`
}

// Run computes today's plan, the what-if under changes (none when changes is empty), and the
// fixes of every limit that breaks.
func Run(in Input, changes map[string]string) (*Result, error) {
	today, err := Compute(in)
	if err != nil {
		return nil, err
	}
	addFixes(in, today)
	r := &Result{Today: today, Fits: today.Fits, Notes: in.Notes}
	if len(changes) > 0 {
		wi := in
		wi.Env = WithChanges(in.Env, changes)
		if r.WhatIf, err = Compute(wi); err != nil {
			return nil, fmt.Errorf("with %s: %w", changesText(changes), err)
		}
		addFixes(wi, r.WhatIf)
		r.Changes, r.Fits = changes, r.WhatIf.Fits
	}
	return r, nil
}

// WithChanges returns env with changes applied: a variable set to "" is removed.
func WithChanges(env, changes map[string]string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func changesText(changes map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(changes)) {
		parts = append(parts, k+"="+changes[k])
	}
	return strings.Join(parts, " ")
}

// addFixes gives every limit that breaks its fixes, best first: aws-node setting changes are
// tried by recomputing the plan with them; the others (a subnet, maxPods, kubelet pull limits,
// EC2 quotas) are computed from the shortfall.
func addFixes(in Input, p *Plan) {
	s := eni.ParseSettings(in.Env)
	for i := range p.Limits {
		l := &p.Limits[i]
		if l.Status != StatusBreaks {
			continue
		}
		var fixes []Fix
		fixes = append(fixes, directFixes(p, l, s)...)
		for _, c := range settingCandidates(p, s, l.ID) {
			wi := in
			wi.Env = WithChanges(in.Env, c.set)
			alt, err := Compute(wi)
			if err != nil {
				continue
			}
			al := alt.Limit(l.ID)
			if al == nil || !better(al.NodesFit, l.NodesFit) {
				continue
			}
			fix := Fix{Text: c.text, Set: c.set, NodesFit: al.NodesFit}
			if first := firstBreakingOther(alt, l.ID); first != nil {
				verb := "fails"
				if first.Kind == KindDelay {
					verb = "waits"
				}
				fix.Next = fmt.Sprintf("%s then %s at node %d", LowerFirst(first.Title), verb, first.BreaksAt)
			}
			fixes = append(fixes, fix)
		}
		sort.SliceStable(fixes, func(a, b int) bool { return better(fixes[a].NodesFit, fixes[b].NodesFit) })
		if len(fixes) > 0 {
			l.Fix = &fixes[0]
			l.Alternatives = fixes[1:]
		}
	}
}

// LowerFirst lowers a title's first letter unless it starts an acronym ("EC2 API calls").
func LowerFirst(s string) string {
	if len(s) > 1 && s[1] >= 'a' && s[1] <= 'z' {
		return strings.ToLower(s[:1]) + s[1:]
	}
	return s
}

// better reports whether NodesFit a moves a limit further than b (-1 is no bound).
func better(a, b int) bool {
	if a < 0 {
		return b >= 0
	}
	return b >= 0 && a > b
}

func firstBreakingOther(p *Plan, id string) *Limit {
	for i := range p.Limits {
		if l := &p.Limits[i]; l.Status == StatusBreaks && l.ID != id {
			return l
		}
	}
	return nil
}

type candidate struct {
	text string
	set  map[string]string
}

// settingCandidates are the aws-node changes worth trying for a limit: prefix delegation (16
// addresses per slot, one call per prefix batch; Nitro types only), and for the warm pool a
// WARM_IP_TARGET/MINIMUM_IP_TARGET pair sized to the pods, which keeps only what the pods use
// plus a few instead of whole ENIs (the VPC CNI's docs/eni-and-ip-target.md).
func settingCandidates(p *Plan, s eni.Settings, id string) []candidate {
	if id != LimitSubnet && id != LimitEC2 && id != LimitPods {
		return nil
	}
	var out []candidate
	if !s.PrefixDelegation {
		out = append(out, candidate{"switch on prefix delegation: ENABLE_PREFIX_DELEGATION=true with WARM_PREFIX_TARGET=1 (Nitro instance types; a free /28 per prefix in the subnet, best with a prefix CIDR reservation)",
			map[string]string{eni.EnvPrefixDelegation: "true", eni.EnvWarmPrefixTarget: "1"}})
	}
	if id == LimitSubnet && !(s.WarmIPTarget.Positive() || s.MinimumIPTarget.Positive()) {
		pods := 0
		for _, g := range p.Groups {
			pods = max(pods, g.Holding.PodAddresses)
		}
		set := map[string]string{eni.EnvWarmIPTarget: "2", eni.EnvMinimumIPTarget: strconv.Itoa(pods)}
		text := fmt.Sprintf("keep addresses, not whole ENIs, warm: WARM_IP_TARGET=2 and MINIMUM_IP_TARGET=%d (WARM_ENI_TARGET is then ignored; more EC2 calls as pods come and go)", pods)
		if s.PrefixDelegation {
			text = fmt.Sprintf("size the prefixes to the pods: WARM_IP_TARGET=2 and MINIMUM_IP_TARGET=%d (WARM_PREFIX_TARGET is then ignored)", pods)
		}
		out = append(out, candidate{text, set})
	}
	return out
}

// directFixes are the fixes that change no aws-node setting.
func directFixes(p *Plan, l *Limit, s eni.Settings) []Fix {
	switch l.ID {
	case LimitSubnet:
		return []Fix{subnetFix(p, s)}
	case LimitPods:
		g := p.Groups[indexGroup(p, strings.TrimPrefix(l.Where, "node group "))]
		n := min(g.AddressCapacity, g.MaxPods)
		if g.PodsPerNode > g.AddressCapacity && g.MaxPods <= g.AddressCapacity {
			return []Fix{{Text: fmt.Sprintf("run at most %d pods per node on %s, or an instance type with more addresses", g.AddressCapacity, g.InstanceType), NodesFit: -1}}
		}
		if g.PodsPerNode > g.MaxPods && g.MaxPods <= g.AddressCapacity {
			n = min(g.PodsPerNode, g.AddressCapacity)
		}
		os, prov := rules.OSUnknown, rules.ProvisionerUnknown
		if len(p.Groups) > 0 {
			os, prov = groupOS(p, g.Name)
		}
		return []Fix{{Text: rules.MaxPodsFix(os, prov, n, s.CustomNetworking), NodesFit: -1}}
	case LimitPulls:
		g := p.Groups[indexGroup(p, strings.TrimPrefix(l.Where, "node group "))]
		// The burst is what a new node's pulls at start need (it follows pods per node, so a
		// what-if with more pods per node asks for more); the refill rate only paces later
		// pulls, so it is the one recommended value in every plan, not the burst again (which
		// made today's plan say 50 and a prefix-delegation what-if 108 for the same cluster).
		return []Fix{{Text: fmt.Sprintf("give the kubelets registryBurst %d (the %d pulls a new node starts at once) and registryPullQPS %d (or 0: no limit) in their KubeletConfiguration (the EKS AMI's kubelet-config.json, nodeadm's spec.kubelet.config, Bottlerocket's settings.kubernetes.registry-qps/registry-burst, Karpenter's kubelet settings)",
			g.PullsPerNode, g.PullsPerNode, rules.RecommendedRegistryPullQPS), NodesFit: -1}}
	case LimitEC2:
		step := max(l.NodesFit, 1)
		return []Fix{{Text: fmt.Sprintf("add the nodes in %d steps of at most %d, %s apart (or ask AWS to raise the account's EC2 API request rate limit for mutating actions, and plan again with --ec2-bucket)",
			(p.Add+step-1)/step, step, p.MaxAddressWait), NodesFit: p.Add}}
	case LimitAPF:
		return []Fix{{Text: "raise the priority level's nominalConcurrencyShares (set the annotation apf.kubernetes.io/autoupdate-spec: \"false\" to keep the change), or add the nodes in steps", NodesFit: l.NodesFit}}
	}
	return nil
}

// subnetFix sizes the room each short subnet's zone needs for the plan's nodes placed there.
func subnetFix(p *Plan, s eni.Settings) Fix {
	var parts []string
	for _, sn := range p.Subnets {
		if sn.Left >= 0 {
			continue
		}
		need := -sn.Left
		// Five addresses of every subnet are AWS's; a /N holds 2^(32-N) - 5.
		bits := 28
		for (1<<(32-bits))-5 < need && bits > 16 {
			bits--
		}
		zone := sn.Zone
		if zone == "" {
			zone = "its zone"
		}
		parts = append(parts, fmt.Sprintf("%s is %d addresses short: add a subnet of at least /%d in %s", sn.ID, need, bits, zone))
	}
	where := "then give the new subnets to the node group"
	if s.CustomNetworking {
		where = "then point each zone's ENIConfig at its new subnet"
	}
	if len(parts) == 0 {
		return Fix{Text: "add subnets to the node group", NodesFit: p.Add}
	}
	return Fix{Text: strings.Join(parts, "; ") + "; " + where, NodesFit: p.Add}
}

// groupOS is the OS and provisioner a group's nodes were seen with (for the max-pods text).
func groupOS(p *Plan, name string) (rules.NodeOS, rules.Provisioner) {
	for _, g := range p.Groups {
		if g.Name == name {
			return g.OS, g.Provisioner
		}
	}
	return rules.OSUnknown, rules.ProvisionerUnknown
}
