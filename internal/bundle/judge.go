package bundle

// The judge side of an analysis: the rules that turn the facts gathered (gather.go) into
// findings. Nothing here reads the bundle.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// criticalProcs run the node: IO delay there delays pods directly.
var criticalProcs = map[string]bool{
	"kubelet": true, "containerd": true, "dockerd": true, "aws-k8s-agent": true, "aws-vpc-cni": true,
	"aws-cni": true, "kube-proxy": true, "containerd-shim": true, "containerd-shim-runc-v2": true,
}

func (a *analysis) report(rep *findings.Report) {
	target := rep.Target
	if a.instanceID != "" {
		rep.Target = target + " (" + textsafe.ClipRaw(a.instanceID, 40) + ")"
	}
	a.reportScanned(rep, a.kubeletLog, SectionKubeletLog, "kubelet/kubelet.log")
	if a.kind != InputJournal {
		a.reportScanned(rep, a.cniLog, SectionCNILog, pCNILogDir+"ipamd.log")
	}
	if a.kind != InputJournal || len(a.bootstrap.files) > 0 {
		a.reportScanned(rep, a.bootstrap, SectionBootstrap, pCloudInitOut+" or "+pUserData)
		a.reportUntraced(rep)
	}
	a.reportPatterns(rep)
	a.reportUserDataProblems(rep)
	if a.kind == InputJournal {
		// A journal holds the kubelet's log only: the other checks have nothing to read, which
		// is no finding about the node.
		a.reportUserDataConfig(rep)
		return
	}
	a.reportIO(rep)
	a.reportBoot(rep)
	a.reportCloudInit(rep)
	a.reportConfig(rep)
}

func missing(sec, file string, rule findings.Rule) findings.Finding {
	f := rule.Skip(file, "not in the bundle")
	f.Section = sec
	return f
}

// reportScanned counts the files a scanner read, or says the one it wanted is missing.
func (a *analysis) reportScanned(rep *findings.Report, s *scanner, sec, want string) {
	if len(s.files) == 0 {
		rep.Add(missing(sec, want, RuleMissing))
		return
	}
	rep.Checked(sec, len(s.files))
}

// says counts the lines of a pattern that say something more ("1 says", "3 say").
var says = findings.Noun{One: "says", Many: "say"}

// reportPatterns turns each log pattern's matches into one finding, with what the other
// findings say about the same cause.
func (a *analysis) reportPatterns(rep *findings.Report) {
	fired := map[string]bool{}
	for _, p := range a.patterns {
		fired[p.rule.Code] = p.hits.count > 0
	}
	for _, p := range a.patterns {
		h := p.hits
		if h.count == 0 {
			continue
		}
		res := textsafe.ClipRawBytes(fileList(h.files), 300)
		switch p.rule.Code {
		case bootstrap.RuleDocker.Code:
			a.reportDocker(rep, p)
			continue
		case RuleNodeStatus.Code:
			if z := a.statusZombie; z.count > 0 {
				f := p.rule.At(findings.Error, res, "%s; %s the Node %s is not found: the Node object was deleted while this kubelet still runs (a zombie kubelet), so it can neither report status nor renew a lease that is owned by its Node",
					p.what.Count(h.count), says.Count(z.count), quoteNameRaw(z.node))
				f.Remediation = "restart the kubelet on the instance so that it registers its Node again (systemctl restart kubelet), or terminate the instance if it was meant to go; then find out what deleted the Node (nodekeeper audit, the cluster autoscaler or Karpenter) and check for leases left behind with nodekeeper leases"
				rep.Add(f.WithEvidence(h.evidence()...))
				continue
			}
		case RuleEvictionStats.Code:
			if z := a.evictionZombie; z.count > 0 {
				rep.Add(p.rule.New(res, "%s; %s the node %s is not found: the Node object was deleted under this kubelet (see NK603)", p.what.Count(h.count), says.Count(z.count), quoteNameRaw(z.node)).WithEvidence(h.evidence()...))
				continue
			}
		case RuleServingCert.Code:
			if fired[bootstrap.RuleHostname.Code] {
				rep.Add(p.rule.New(res, "%s; the user data also overrides the hostname (NK631): the node asks for a certificate under a name that is not the instance's EC2 private DNS name, which EKS does not approve", p.what.Count(h.count)).
					WithEvidence(append(h.evidence(), "hostname override: "+a.firstEvidence(bootstrap.RuleHostname.Code))...))
				continue
			}
		case bootstrap.RuleHostname.Code:
			if fired[RuleServingCert.Code] {
				f := p.rule.New(res, "%s; the kubelet log shows the consequence: no serving certificate (NK605), since EKS approves kubelet-serving CSRs only for the instance's EC2 private DNS name", p.what.Count(h.count))
				rep.Add(f.WithEvidence(append(h.evidence(), "kubelet log: "+a.firstEvidence(RuleServingCert.Code))...))
				continue
			}
		}
		rep.Add(p.rule.New(res, "%s", p.what.Count(h.count)).WithEvidence(h.evidence()...))
	}
}

func (a *analysis) firstEvidence(code string) string {
	for _, p := range a.patterns {
		if p.rule.Code == code && len(p.hits.samples) > 0 {
			return p.hits.samples[0]
		}
	}
	return ""
}

func fileList(files map[string]int) string {
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// reportDocker reports Docker commands only on nodes where containerd is the runtime.
func (a *analysis) reportDocker(rep *findings.Report, p *pattern) {
	h := p.hits
	res := textsafe.ClipRawBytes(fileList(h.files), 300)
	if len(a.runtimeHint) == 0 {
		rep.Add(bootstrap.RuleDocker.At(findings.Info, res,
			"%s; the bundle does not show which runtime the kubelet uses", p.what.Count(h.count)).WithEvidence(h.evidence()...))
		return
	}
	ev := append(h.evidence(), "containerd is the runtime: "+textsafe.ClipRawBytes(a.runtimeHint[0], evidenceWidth))
	rep.Add(bootstrap.RuleDocker.New(res, "%s while containerd is the container runtime", p.what.Count(h.count)).WithEvidence(ev...))
}

// reportUntraced says when cloud-init-output.log was read but shows none of the user data's
// commands: the bootstrap checks saw nothing, which is not the same as nothing wrong.
func (a *analysis) reportUntraced(rep *findings.Report) {
	if !slices.Contains(a.bootstrap.files, pCloudInitOut) || a.tracedLines > 0 || a.userDataRead {
		return
	}
	f := bootstrap.RuleUserDataUntraced.Skip(pCloudInitOut, "no traced commands (\"+ cmd\" lines): the user data runs without `set -x`, so NK631-NK633 could not see what it ran; pass --user-data FILE")
	f.Section = SectionBootstrap
	rep.Add(f)
}

func (a *analysis) reportIO(rep *findings.Report) {
	if !a.ioRead {
		rep.Add(missing(SectionIO, pIOThrottling, RuleMissing))
		return
	}
	rep.Checked(SectionIO, 1)
	sort.SliceStable(a.ioTop, func(i, j int) bool { return a.ioTop[i].delay > a.ioTop[j].delay })
	var over []ioProc
	critical := false
	for _, p := range a.ioTop {
		if p.delay >= a.o.IODelayThreshold {
			over = append(over, p)
			critical = critical || criticalProcs[p.name]
		}
	}
	if len(over) == 0 {
		return
	}
	var ev []string
	for i, p := range over {
		if i == 5 {
			ev = append(ev, fmt.Sprintf("... and %d more", len(over)-5))
			break
		}
		ev = append(ev, fmt.Sprintf("pid %d (%s): %s waiting for block IO", p.pid, p.name, p.delay))
	}
	msg := fmt.Sprintf("%s waited %s or more for block IO; most: %s (%s)", findings.Noun{One: "process", Many: "processes"}.Count(len(over)), a.o.IODelayThreshold, over[0].name, over[0].delay)
	if critical {
		msg += "; node agents (kubelet, containerd, VPC CNI) are among them"
	}
	rep.Add(RuleIODelay.New(pIOThrottling, "%s", msg).WithEvidence(ev...))
}

// kubeletConfig merges what the bundle says about the kubelet's configuration: base file, drop-ins
// in name order, then command-line flags (which win, as in the kubelet).
func (a *analysis) kubeletConfig() (rules.KubeletConfig, string, bool) {
	var c rules.KubeletConfig
	var srcs []string
	for _, f := range kubeletConfigFiles {
		if cfg, ok := a.configs[f]; ok {
			c = c.Merge(cfg)
			srcs = append(srcs, f)
		}
	}
	names := make([]string, 0, len(a.dropins))
	for n := range a.dropins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c = c.Merge(a.dropins[n])
		srcs = append(srcs, n)
	}
	if a.flagsSeen {
		c = c.Merge(a.flags)
		srcs = append(srcs, pKubeletService+" flags")
	}
	if len(srcs) == 0 && a.userDataSet {
		// What the kubelet ran with is not in the input: the user data says what it was asked
		// to run with.
		return a.userDataCfg, a.userDataSrc, true
	}
	return c, strings.Join(srcs, " + "), len(srcs) > 0
}

func (a *analysis) reportConfig(rep *findings.Report) {
	cfg, src, ok := a.kubeletConfig()
	for _, e := range a.configErrs {
		f := RuleMissing.Skip("kubelet/config", e)
		f.Section = rules.SectionKubelet
		rep.Add(f)
	}
	node := "node"
	if a.instanceID != "" {
		node = "node/" + a.instanceID
	}
	if !ok {
		f := RuleMissing.Skip("kubelet/config.json", "no kubelet configuration (kubelet/config.json, kubelet/kubelet-config.json) or kubelet flags in the bundle")
		f.Section = rules.SectionKubelet
		rep.Add(f)
	} else {
		rep.Checked(rules.SectionKubelet, 1)
		rep.Add(rules.CheckKubeletConfig(node, src, cfg, cfg.EffectiveMaxPods())...)
	}

	// aws-node settings.
	var settings eni.Settings
	switch {
	case a.env != nil:
		settings = eni.ParseSettings(a.env)
		rep.Checked(rules.SectionAWSNode, 1)
		in := rules.CNIInput{Resource: a.envSource, Env: a.env, MinVersion: a.o.MinCNIVersion}
		if v, err := eni.ParseVersion(a.cniVersion); err == nil && a.cniVersion != "" {
			in.Version = &v
		}
		fs := rules.CheckCNISettings(in)
		if !a.envFull {
			// ipamd's introspection lists only a few settings: absence proves nothing there.
			kept := fs[:0]
			for _, f := range fs {
				if f.Code != rules.RuleClusterEndpoint.Code {
					kept = append(kept, f)
				}
			}
			fs = kept
		}
		rep.Add(fs...)
	default:
		reason := "no aws-node environment in the bundle (" + pCNIVarsCtrd + ", " + pIPAMDEnv + ")"
		if len(a.envErrs) > 0 {
			reason += ": " + strings.Join(a.envErrs, "; ")
		}
		f := RuleMissing.Skip(pCNIVarsCtrd, reason)
		f.Section = rules.SectionAWSNode
		rep.Add(f)
	}

	// Pod capacity: configured max pods against the instance type's addresses.
	itype, isrc := a.instanceType, a.instanceSource
	if a.o.InstanceType != "" {
		itype, isrc = a.o.InstanceType, "--instance-type"
	}
	switch {
	case !ok:
		f := RuleMissing.Skip(node, "max pods unknown: no kubelet configuration in the bundle")
		f.Section = rules.SectionNodes
		rep.Add(f)
	case itype == "":
		id := ""
		if a.instanceID != "" {
			id = " (" + pInstanceID + " has " + a.instanceID + ", which does not name the type)"
		}
		f := RuleMissing.Skip(node, "instance type unknown: no \"Found instance-type\" line in ipamd.log"+id+"; pass --instance-type")
		f.Section = rules.SectionNodes
		rep.Add(f)
	default:
		n := rules.NodeCapacity{Resource: node, InstanceType: itype, CapacityPods: cfg.EffectiveMaxPods()}
		if a.vcpus > 0 {
			n.VCPUs, n.VCPUSource = a.vcpus, pProcStat
		}
		res := rules.CheckPodCapacity(n, rules.CNIMode{Settings: settings, Version: a.cniVersion, ReservedENIs: a.o.ReservedENIs})
		if res.Evaluated {
			rep.Checked(rules.SectionNodes, 1)
		}
		for i := range res.Findings {
			res.Findings[i] = res.Findings[i].WithEvidence(fmt.Sprintf("instance type %s from %s; max pods %d from %s", itype, isrc, cfg.EffectiveMaxPods(), maxPodsSource(cfg, src)))
			if res.Findings[i].Code == rules.RuleMaxPodsAboveIPs.Code && settings.CustomNetworking {
				// The usual cause: custom networking with the bootstrap script's default max pods.
				res.Findings[i] = res.Findings[i].WithEvidence("custom networking is on: bootstrap.sh needs --use-max-pods false and --kubelet-extra-args '--max-pods=N'; Karpenter needs reservedENIs: 1")
			}
		}
		a.fitMaxPodsFix(res.Findings, res.IPLimit, settings.CustomNetworking)
		rep.Add(res.Findings...)
	}
}

// fitMaxPodsFix adds to NK101/NK409 the max-pods fix for the node's OS and provisioner, as far
// as the input shows them (rules.MaxPodsFix lists every option when it does not).
func (a *analysis) fitMaxPodsFix(fs []findings.Finding, limit int, customNetworking bool) {
	if limit <= 0 {
		return
	}
	for i := range fs {
		if fs[i].Code == rules.RuleMaxPodsAboveIPs.Code || fs[i].Code == "NK409" {
			// The same evidence line doctor gives each node.
			fs[i] = fs[i].WithEvidence(fmt.Sprintf("fix for this node (%s, %s): %s", a.osHint, a.provHint,
				rules.MaxPodsFix(a.osHint, a.provHint, limit, customNetworking)))
		}
	}
}

func maxPodsSource(c rules.KubeletConfig, src string) string {
	if c.MaxPods == nil {
		return "the kubelet default (not set in " + src + ")"
	}
	return src
}
