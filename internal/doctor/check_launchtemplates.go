package doctor

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// launchTemplateCheck runs bundle --user-data's checks on the user data of every launch template
// version in use (CheckTemplateVersion), once per version.
type launchTemplateCheck struct{}

func (launchTemplateCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: bootstrap.RuleUserDataUnreadable},
		{Fact: FactEC2Instances, Rule: bootstrap.RuleUserDataUnreadable, Optional: true,
			Note: "only the node groups' launch templates are checked, and their Nodes counted by the node group label"},
		{Fact: FactLaunchTemplates, Rule: bootstrap.RuleUserDataUnreadable},
	}
}

func (launchTemplateCheck) Run(f *Facts) Result {
	var r Result
	nodes := map[string]*corev1.Node{}
	for i := range f.Nodes {
		nodes[f.Nodes[i].Name] = &f.Nodes[i]
	}
	mode, known := cniMode(f)
	var m *rules.CNIMode
	if known {
		m = &mode
	}
	for _, v := range f.LaunchTemplates {
		var ns []*corev1.Node
		for _, name := range v.Nodes {
			if n := nodes[name]; n != nil {
				ns = append(ns, n)
			}
		}
		r.add(CheckTemplateVersion(v, ns, m, f.EC2.Types)...)
	}
	r.checked(bootstrap.Section, len(f.LaunchTemplates))
	return r
}

// maxUserDataBase64 is the most base64 text of user data read: MaxUserDataSize once decoded.
var maxUserDataBase64 = base64.StdEncoding.EncodedLen(bootstrap.MaxUserDataSize)

// CheckTemplateVersion runs the user-data checks on one launch template version: the bootstrap
// script's hostname, iptables and Docker commands (NK631-NK633), the parts that cannot be read
// (NK635), and the max pods it gives the kubelet against the addresses of its Nodes' instance
// types (NK101, when mode is known). Each finding is reported once for the version, saying
// "introduced in ID version N, K nodes" ("introduced in ID version N (launched as EKS's copy
// ID2 version M), K nodes" for a managed node group's); nodes are the Nodes launched from it.
func CheckTemplateVersion(v TemplateVersion, nodes []*corev1.Node, mode *rules.CNIMode, types *eni.Catalog) []findings.Finding {
	res := fmt.Sprintf("launchtemplate/%s/%d", v.ID, v.Version)
	where := fmt.Sprintf("introduced in %s, %s", v.Name(), plural(len(nodes), "node"))
	if len(v.Copies) > 0 {
		// The user's version first: it is the one they edit; EKS's copy is what EC2 tagged.
		where = fmt.Sprintf("introduced in %s (launched as EKS's copy %s), %s", v.Name(), strings.Join(v.Copies, ", "), plural(len(nodes), "node"))
	}
	users := "used by " + strings.Join(v.Users, ", ")
	if len(v.Users) == 0 {
		users = "used by no group found"
	}
	if v.Err != "" {
		return []findings.Finding{bootstrap.RuleUserDataUnreadable.Skip(res, "EC2 no longer describes it ("+v.Err+"); what it held still runs on its "+plural(len(nodes), "node"))}
	}
	if v.Data == nil || v.Data.UserData == nil || strings.TrimSpace(*v.Data.UserData) == "" {
		return nil // no user data: the AMI's own bootstrap runs
	}
	ud := *v.Data.UserData
	if len(ud) > maxUserDataBase64 {
		return []findings.Finding{bootstrap.RuleUserDataUnreadable.New(res, "%d bytes of base64 user data, more than %d (EC2 takes 16 KB): not read; %s", len(ud), maxUserDataBase64, where).WithEvidence(users)}
	}
	u, err := bootstrap.Split(v.Name()+" user data", v.Name(), []byte(ud))
	if err != nil {
		return []findings.Finding{bootstrap.RuleUserDataUnreadable.New(res, "%v; %s", err, where).WithEvidence(users)}
	}
	out := lineFindings(u, res, where, users, nodes)
	for _, p := range u.Problems() {
		out = append(out, bootstrap.RuleUserDataUnreadable.New(res, "%s; %s", p, where).WithEvidence(users))
	}
	if k := u.Kubelet(); k.Config.MaxPods != nil && mode != nil {
		if f, ok := templateMaxPods(v, k, nodes, *mode, types, res, where); ok {
			out = append(out, f.WithEvidence(users))
		}
	}
	return out
}

// lineFindings runs bootstrap's command checks on every line of the scripts, one finding per
// check with the number of lines and the first as evidence.
func lineFindings(u *bootstrap.UserData, res, where, users string, nodes []*corev1.Node) []findings.Finding {
	var out []findings.Finding
	for _, c := range bootstrap.LineChecks {
		count, first := 0, ""
		for _, p := range u.Parts {
			if p.Kind != bootstrap.KindScript {
				continue
			}
			bootstrap.EachLine(p.Body, func(n int, line []byte) {
				if !c.Re.Match(line) {
					return
				}
				if count++; count == 1 {
					first = fmt.Sprintf("%s line %d: %s", p.Name, n, textsafe.ClipRawBytes(strings.TrimSpace(string(line)), 200))
				}
			})
		}
		if count == 0 {
			continue
		}
		f := c.Rule.New(res, "%s in the user data; %s", c.What.Count(count), where)
		if c.Rule.Code == bootstrap.RuleDocker.Code {
			rt := containerdNode(nodes)
			if rt == "" {
				f = c.Rule.At(findings.Info, res, "%s in the user data; none of its Nodes says which runtime it runs; %s", c.What.Count(count), where)
			} else {
				f.Message = fmt.Sprintf("%s in the user data while containerd is the runtime (%s); %s", c.What.Count(count), rt, where)
			}
		}
		out = append(out, f.WithEvidence(first, users))
	}
	return out
}

// containerdNode names a Node that runs containerd, or "".
func containerdNode(nodes []*corev1.Node) string {
	for _, n := range nodes {
		if rt := n.Status.NodeInfo.ContainerRuntimeVersion; strings.HasPrefix(rt, "containerd://") {
			return "node/" + n.Name + " " + rt
		}
	}
	return ""
}

// templateMaxPods compares the max pods the user data gives with the addresses of the instance
// types its Nodes run (and the template's own type), reporting the tightest type only: one
// finding per version.
func templateMaxPods(v TemplateVersion, k bootstrap.Kubelet, nodes []*corev1.Node, mode rules.CNIMode, types *eni.Catalog, res, where string) (findings.Finding, bool) {
	var its []string
	for _, n := range nodes {
		if t := instanceType(n); t != "" && !slices.Contains(its, t) {
			its = append(its, t)
		}
	}
	if t := string(v.Data.InstanceType); t != "" && !slices.Contains(its, t) {
		its = append(its, t)
	}
	sort.Strings(its)
	maxPods := int(*k.Config.MaxPods)
	var worst *rules.CapacityResult
	var over []string
	for _, t := range its {
		r := rules.CheckPodCapacity(rules.NodeCapacity{Resource: res, InstanceType: t, CapacityPods: maxPods, Types: types}, mode)
		if !slices.ContainsFunc(r.Findings, func(f findings.Finding) bool { return f.Code == rules.RuleMaxPodsAboveIPs.Code }) {
			continue
		}
		over = append(over, fmt.Sprintf("%s: addresses for %d pods", t, r.IPLimit))
		if worst == nil || r.IPLimit < worst.IPLimit {
			worst = &r
		}
	}
	if worst == nil {
		return findings.Finding{}, false
	}
	var f findings.Finding
	for _, x := range worst.Findings {
		if x.Code == rules.RuleMaxPodsAboveIPs.Code {
			f = x
		}
	}
	f.Section = bootstrap.Section
	f.Message += fmt.Sprintf("; max pods %d from the user data (%s), %s", maxPods, k.Source, where)
	os, prov := rules.OSUnknown, rules.ProvisionerUnknown
	if len(nodes) > 0 {
		os, prov = rules.DetectNodeOS(nodes[0].Status.NodeInfo.OSImage), rules.DetectProvisioner(nodes[0].Labels)
	}
	if os == rules.OSUnknown && k.NodeConfig {
		os = rules.OSAmazonLinux2023
	}
	return f.WithEvidence(strings.Join(over, "; "),
		fmt.Sprintf("fix for this template (%s, %s): %s", os, prov, rules.MaxPodsFix(os, prov, worst.IPLimit, mode.Settings.CustomNetworking))), true
}
