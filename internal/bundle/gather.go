package bundle

// The gather side of an analysis: which members of a bundle are read and what facts they leave
// on the analysis. The rules that judge those facts are in judge.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// smallFileCap bounds the members read whole (configuration, environment, /proc/stat copies).
const smallFileCap = 16 << 20

// Member paths inside a bundle (after the optional top directory).
const (
	pKubeletLog     = "kubelet/kubelet.log"
	pKubeletService = "kubelet/kubelet_service.txt"
	pIOThrottling   = "system/io_throttling.txt"
	pInstanceID     = "system/instance-id.txt"
	pProcStat       = "system/procstat.txt"
	pCloudInitOut   = "var_log/cloud-init-output.log"
	pUserData       = "var_log/user-data.log"
	pIPAMDEnv       = "ipamd/ipamd-env-settings.json"
	pCNIVarsCtrd    = "cni/cni-configuration-variables-containerd.json"
	pCNIVarsDocker  = "cni/cni-configuration-variables-dockerd.txt"
	pCNILogDir      = "var_log/aws-routed-eni/"
)

// kubelet configuration files, by AMI: nodeadm (AL2023) and bootstrap.sh (AL2).
var kubeletConfigFiles = []string{"kubelet/config.json", "kubelet/kubelet-config.json"}

var (
	reIPAMDVer = regexp.MustCompile(`Starting L-IPAMD (v?\d+\.\d+\.\d+\S*)`)
	reInstType = regexp.MustCompile(`Found instance-type: ([a-z0-9-]+\.[a-z0-9-]+)`)
	reCPU      = regexp.MustCompile(`^cpu\d+\s`)
)

// reNodeNotFound finds the Node name in `nodes "NAME" not found` (klog quotes it as \"NAME\"
// inside err="..."): the API server answers so when the kubelet's Node object was deleted.
var reNodeNotFound = regexp.MustCompile(`nodes? \\?"([^"\\\s]{1,253})\\?" not found`)

func newAnalysis(o Options) *analysis {
	lines := &lineReader{}
	a := &analysis{
		o:       o,
		kind:    InputArchive,
		lines:   lines,
		configs: map[string]rules.KubeletConfig{},
		dropins: map[string]rules.KubeletConfig{},
	}
	zombie := func(into *zombieLines) func(line []byte) {
		return func(line []byte) {
			if m := reNodeNotFound.FindSubmatch(line); m != nil {
				into.count++
				if into.node == "" {
					into.node = string(m[1])
				}
			}
		}
	}
	// Address-exhaustion and ipamd lines reach the kubelet log too (through the CNI error in
	// "Failed to create pod sandbox"), so those patterns run on both; their matches are counted
	// once per rule whatever the file.
	//
	// Formats, from the amazon-vpc-cni-k8s source: the CNI plugin (cmd/routed-eni-cni-plugin/cni.go)
	// logs "Failed to assign an IP address to container %s" and returns "add cmd: failed to assign
	// an IP address to container", which the kubelet quotes; ipamd's datastore
	// (pkg/ipamd/datastore/data_store.go) logs "DataStore has no available IP/Prefix addresses";
	// ipamd (pkg/ipamd/ipamd.go) logs "Failed to increase pool size due to not able to allocate
	// ENI %v" with the EC2 error code (InsufficientFreeAddressesInSubnet, InsufficientCidrBlocks,
	// RequestLimitExceeded); the plugin's gRPC dial to ipamd fails with "dial tcp
	// 127.0.0.1:50051: connect: connection refused".
	ipamdRefused := &pattern{rule: RuleIPAMDRefused, all: bs("connection refused"), any: bs("127.0.0.1:50051", "ipamd.sock"), what: findings.Noun{One: "connection to ipamd refused", Many: "connections to ipamd refused"}, onMatchAt: a.boot.noteRefused}
	noAddress := &pattern{rule: RuleNoAddress, any: bs("ailed to assign an IP address to container", "no available IP/Prefix addresses"), what: findings.Noun{One: "line where a pod got no IP address", Many: "lines where a pod got no IP address"}}
	subnet := &pattern{rule: RuleSubnetExhausted, any: bs("InsufficientFreeAddressesInSubnet", "InsufficientCidrBlocks"), what: findings.Noun{One: "subnet address exhaustion error", Many: "subnet address exhaustion errors"}}
	a.kubeletLog = newScanner(
		&pattern{rule: RulePullQPS, all: bs("pull QPS exceeded"), what: findings.Noun{One: `"pull QPS exceeded" error`, Many: `"pull QPS exceeded" errors`}},
		&pattern{rule: RuleLeaseOwner, all: bs("Failed to get node when trying to set owner ref to the node lease"), what: findings.Noun{One: "lease owner reference failure", Many: "lease owner reference failures"}},
		&pattern{rule: RuleNodeStatus, any: bs("Unable to update node status", "Error updating node status"), what: findings.Noun{One: "node status update failure", Many: "node status update failures"}, onMatch: zombie(&a.statusZombie)},
		&pattern{rule: RuleEvictionStats, all: bs("Eviction manager: failed to get summary stats"), what: findings.Noun{One: "eviction manager summary stats failure", Many: "eviction manager summary stats failures"}, onMatch: zombie(&a.evictionZombie)},
		&pattern{rule: RuleServingCert, all: bs("no serving certificate available for the kubelet"), what: findings.Noun{One: "TLS handshake refused for want of a serving certificate", Many: "TLS handshakes refused for want of a serving certificate"}},
		ipamdRefused, noAddress, subnet,
	)
	a.cniLog = newScanner(
		ipamdRefused,
		&pattern{rule: RuleIPAMDAPIServer, all: bs("Unable to reach API Server"), what: findings.Noun{One: `"Unable to reach API Server" error`, Many: `"Unable to reach API Server" errors`}},
		&pattern{rule: RuleEC2Throttle, any: bs("RequestLimitExceeded", "ThrottlingException", "Throttling: Rate exceeded"), what: findings.Noun{One: "EC2 throttling error", Many: "EC2 throttling errors"}},
		noAddress, subnet,
	)
	a.bootstrap = newScanner(
		bootstrapPatterns()...,
	)
	a.ci.init(lines)
	for _, s := range []*scanner{a.kubeletLog, a.cniLog, a.bootstrap} {
		s.lines = lines
		for _, p := range s.patterns {
			if !slices.Contains(a.patterns, p) {
				a.patterns = append(a.patterns, p)
			}
		}
	}
	return a
}

// bootstrapPatterns are internal/bootstrap's command checks (NK631-NK633) as log patterns.
func bootstrapPatterns() []*pattern {
	out := make([]*pattern, len(bootstrap.LineChecks))
	for i, c := range bootstrap.LineChecks {
		out[i] = &pattern{rule: c.Rule, re: c.Re, what: c.What}
	}
	return out
}

// zombieLines counts log lines that say the kubelet's own Node is not found.
type zombieLines struct {
	count int
	node  string
}

// memberKind is one kind of bundle member that is read, how, and for which checks. memberKinds
// is the only list of what is read from a bundle: visit dispatches on it, so what is read and
// how it is read cannot drift apart, and the judge side (judge.go) reads only the facts these
// readers leave on the analysis.
type memberKind struct {
	// what names the member(s), for the reader of this table.
	what  string
	match func(name string) bool
	// stream reads a member line by line whatever its size (logs); whole reads a small member
	// whole, at most smallFileCap bytes (configuration, environment, copies of /proc files).
	stream func(a *analysis, name string, r io.Reader) error
	whole  func(a *analysis, name string, data []byte)
	// feeds are the report sections whose checks use what is read.
	feeds []string
}

func is(paths ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(paths, name) }
}

var memberKinds = []memberKind{
	{what: pKubeletLog, match: is(pKubeletLog), feeds: []string{SectionKubeletLog},
		stream: func(a *analysis, name string, r io.Reader) error {
			return a.kubeletLog.scan(name, r, a.noteJournalHost)
		}},
	{what: pCNILogDir + "{ipamd,plugin}*.log", feeds: []string{SectionCNILog, rules.SectionNodes, rules.SectionAWSNode},
		match:  func(name string) bool { return strings.HasPrefix(name, pCNILogDir) && isCNILog(path.Base(name)) },
		stream: (*analysis).readCNILog},
	{what: pCloudInitOut + ", " + pUserData, match: is(pCloudInitOut, pUserData), feeds: []string{SectionBootstrap, rules.SectionNodes},
		stream: (*analysis).readBootstrapLog},
	{what: pCloudInitLog + ", " + pNodeadmDir + "nodeadm-{config,run,boot-hook}.log", match: isBootLog, feeds: []string{SectionBootstrap, SectionIO},
		stream: (*analysis).readBootLog},
	{what: pIOThrottling, match: is(pIOThrottling), feeds: []string{SectionIO},
		stream: func(a *analysis, _ string, r io.Reader) error { return a.readIO(r) }},
	{what: pUname, match: is(pUname), feeds: []string{SectionBootstrap},
		whole: (*analysis).readUname},
	{what: pInstanceID, match: is(pInstanceID), feeds: []string{rules.SectionNodes},
		whole: func(a *analysis, _ string, data []byte) { a.instanceID = strings.TrimSpace(string(data)) }},
	{what: pProcStat, match: is(pProcStat), feeds: []string{rules.SectionNodes, SectionIO},
		whole: (*analysis).readProcStat},
	{what: pKubeletService, match: is(pKubeletService), feeds: []string{rules.SectionKubelet, rules.SectionNodes},
		whole: func(a *analysis, _ string, data []byte) { a.readFlags(data) }},
	{what: pIPAMDEnv, match: is(pIPAMDEnv), feeds: []string{rules.SectionAWSNode, rules.SectionNodes},
		whole: func(a *analysis, _ string, data []byte) { a.readIPAMDEnv(data) }},
	{what: pCNIVarsCtrd + ", " + pCNIVarsDocker, match: is(pCNIVarsCtrd, pCNIVarsDocker), feeds: []string{rules.SectionAWSNode, rules.SectionNodes},
		whole: (*analysis).readContainerEnv},
	{what: "kubelet configuration files and drop-ins", match: isKubeletConfig, feeds: []string{rules.SectionKubelet, rules.SectionNodes},
		whole: (*analysis).readKubeletConfig},
	{what: "containerd version and configuration", match: is("containerd/containerd-version.txt", "containerd/containerd-config.txt"), feeds: []string{SectionBootstrap},
		whole: (*analysis).readContainerdPresence},
}

// ErrNotRecognised is wrapped by the error for an input in which nothing of what the checks read
// was found: a report of nothing must not pass for a clean bill of health.
var ErrNotRecognised = errors.New("nothing to check")

// recognisedAny fails when no member of a bundle is one the checks read (a README and random
// bytes, or only empty directories), saying what was looked for.
func (a *analysis) recognisedAny() error {
	if a.recognised > 0 {
		return nil
	}
	looked := make([]string, 0, len(memberKinds))
	for _, k := range memberKinds {
		looked = append(looked, k.what)
	}
	return fmt.Errorf("%w: this is not an EKS logs collector bundle: none of its %d files is one the checks read (looked for %s, at the top of the bundle or under one top directory)",
		ErrNotRecognised, a.files, strings.Join(looked, "; "))
}

func (a *analysis) visit(m Member, r io.Reader) error {
	name := m.Name
	switch {
	case name == "kubelet/config.json":
		// nodeadm writes it; bootstrap.sh does not. nodeadm's journals in nodeadm/ are written
		// on every systemd host, AL2's too: only a line of them says AL2023 (nodeos.go).
		a.osHint = rules.OSAmazonLinux2023
	case name == "kubelet/kubelet-config.json" && a.osHint == rules.OSUnknown:
		a.osHint = rules.OSAmazonLinux2
	}
	a.files++
	i := slices.IndexFunc(memberKinds, func(k memberKind) bool { return k.match(name) })
	if i < 0 {
		return nil
	}
	a.recognised++
	k := memberKinds[i]
	if k.stream != nil {
		return k.stream(a, name, r)
	}
	if m.Size > smallFileCap {
		return unsafeErr("member %q is %d bytes, more than %d for a file of its kind", name, m.Size, smallFileCap)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: reading %s: %w", ErrUnsafeArchive, quoteName(name), err)
	}
	k.whole(a, name, data)
	return nil
}

// readCNILog scans an ipamd or plugin log, noting the instance type ipamd found and the
// version it started as. Rotated logs (ipamd-<time>.log) are older than ipamd.log and sort by
// time, so the version of the newest file wins whatever order the files are read in, and the
// last start in a file wins within it (a log may span an upgrade).
func (a *analysis) readCNILog(name string, r io.Reader) error {
	age := cniLogAge(name)
	return a.cniLog.scan(name, r, func(_ int, line []byte) {
		if a.instanceType == "" || age > a.instanceAge {
			if mm := reInstType.FindSubmatch(line); mm != nil {
				a.instanceType, a.instanceSource, a.instanceAge = string(mm[1]), name, age
			}
		}
		if mm := reIPAMDVer.FindSubmatch(line); mm != nil && (a.cniVersion == "" || age >= a.cniVersionAge) {
			a.cniVersion, a.cniVersionFrom, a.cniVersionAge = string(mm[1]), name, age
		}
	})
}

// cniLogAge orders the VPC CNI's log files from oldest to newest: rotated files by their name
// (which holds the time of rotation), the file being written (ipamd.log, plugin.log) last.
func cniLogAge(name string) string {
	base := path.Base(name)
	if base == "ipamd.log" || base == "plugin.log" {
		return "\xff"
	}
	return base
}

// readBootstrapLog scans cloud-init's output or the user data log, counting the traced ("+ cmd")
// lines and noting OS and provisioner hints.
func (a *analysis) readBootstrapLog(name string, r io.Reader) error {
	return a.bootstrap.scan(name, r, func(n int, line []byte) {
		if name == pCloudInitOut && bytes.HasPrefix(line, []byte("+ ")) {
			a.tracedLines++
		}
		a.hintsFrom(line)
		a.cloudInitLine(name, n, line)
	})
}

// readProcStat counts the CPUs of a /proc/stat copy and notes the boot time it gives.
func (a *analysis) readProcStat(name string, data []byte) {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if reCPU.Match(l) {
			a.vcpus++
		}
		a.boot.noteProcStat(name, i+1, l)
	}
}

// readKubeletConfig reads a kubelet configuration file or drop-in, noting a containerd endpoint.
func (a *analysis) readKubeletConfig(name string, data []byte) {
	c, err := rules.ParseKubeletConfigFile(data)
	if err != nil {
		a.configErrs = append(a.configErrs, fmt.Sprintf("%s: %v", name, err))
		return
	}
	var rt struct {
		Endpoint string `json:"containerRuntimeEndpoint"`
	}
	if json.Unmarshal(data, &rt) == nil && strings.Contains(rt.Endpoint, "containerd") {
		a.addRuntimeHint(name + ": containerRuntimeEndpoint " + rt.Endpoint)
	}
	if strings.HasPrefix(name, "kubelet/config.json.d/") {
		a.dropins[name] = c
	} else {
		a.configs[name] = c
	}
}

// readContainerdPresence notes that containerd was running when the bundle was collected.
func (a *analysis) readContainerdPresence(name string, data []byte) {
	if len(bytes.TrimSpace(data)) > 0 {
		a.addRuntimeHint(name + " present (containerd running when collected)")
	}
}

// addRuntimeHint notes evidence that containerd is the runtime, keeping the list sorted so that
// the one quoted does not depend on the order the members were read in.
func (a *analysis) addRuntimeHint(h string) {
	i, _ := slices.BinarySearch(a.runtimeHint, h)
	a.runtimeHint = slices.Insert(a.runtimeHint, i, h)
}

func isCNILog(base string) bool {
	return (strings.HasPrefix(base, "ipamd") || strings.HasPrefix(base, "plugin")) && strings.HasSuffix(base, ".log")
}

func isKubeletConfig(name string) bool {
	for _, f := range kubeletConfigFiles {
		if name == f {
			return true
		}
	}
	return strings.HasPrefix(name, "kubelet/config.json.d/") && strings.HasSuffix(name, ".conf")
}

// hintsFrom notes what a bootstrap or kubelet command line says about the node's OS and
// provisioner: bootstrap.sh is the AL2 (and Ubuntu) EKS AMI's, nodeadm AL2023's; the node labels
// passed to the kubelet name Karpenter's NodePool or the managed node group.
func (a *analysis) hintsFrom(line []byte) {
	switch {
	case bytes.Contains(line, []byte("nodeadm")):
		a.osHint = rules.OSAmazonLinux2023
	case bytes.Contains(line, []byte("/etc/eks/bootstrap.sh")) && a.osHint == rules.OSUnknown:
		a.osHint = rules.OSAmazonLinux2
	}
	switch {
	case bytes.Contains(line, []byte(rules.LabelKarpenterNodePool+"=")) || bytes.Contains(line, []byte(rules.LabelKarpenterProvisioner+"=")):
		a.provHint = rules.ProvisionerKarpenter
	case bytes.Contains(line, []byte(rules.LabelEKSNodegroup+"=")) && a.provHint == rules.ProvisionerUnknown:
		a.provHint = rules.ProvisionerManagedNodeGroup
	}
}

// readFlags picks the kubelet flags that override configuration from `systemctl cat kubelet`.
func (a *analysis) readFlags(data []byte) {
	a.hintsFrom(data)
	f := bootstrap.ParseFlags(string(data))
	if !f.Seen {
		return
	}
	a.flagsSeen = true
	a.flags = a.flags.Merge(f.Config)
	for _, ep := range f.RuntimeEndpoints {
		if strings.Contains(ep, "containerd") {
			a.addRuntimeHint(pKubeletService + ": --container-runtime-endpoint " + ep)
		}
	}
}

// readIPAMDEnv reads ipamd's introspection answer: a few settings, already parsed by ipamd.
func (a *analysis) readIPAMDEnv(data []byte) {
	if a.envFull {
		return
	}
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(data), &m); err != nil {
		a.envErrs = append(a.envErrs, fmt.Sprintf("%s: %v (introspection was off or ipamd down when collected)", pIPAMDEnv, err))
		return
	}
	env := map[string]string{}
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			// ipamd reports 0 for an unset WARM_IP_TARGET/MINIMUM_IP_TARGET.
			if x == 0 && (k == eni.EnvWarmIPTarget || k == eni.EnvMinimumIPTarget) {
				continue
			}
			env[k] = strconv.FormatInt(int64(x), 10)
		case bool:
			env[k] = strconv.FormatBool(x)
		case string:
			env[k] = x
		}
	}
	a.env, a.envSource = env, pIPAMDEnv
}

// readContainerEnv reads the aws-node container's full environment and image from
// `ctr container info` (JSON objects, one per container) or `docker container inspect` (a JSON
// array). The collector redirects errors into the same file, so decoding stops at the first
// non-JSON text.
func (a *analysis) readContainerEnv(name string, data []byte) {
	if a.envFull && a.envSource < name {
		return // both files hold it: the first by name wins, whatever the order they come in
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		var objs []json.RawMessage
		if len(raw) > 0 && raw[0] == '[' {
			if json.Unmarshal(raw, &objs) != nil {
				continue
			}
		} else {
			objs = []json.RawMessage{raw}
		}
		for _, o := range objs {
			var c struct {
				Image string `json:"Image"`
				Spec  struct {
					Process struct {
						Env []string `json:"env"`
					} `json:"process"`
				} `json:"Spec"`
				Config struct {
					Image string   `json:"Image"`
					Env   []string `json:"Env"`
				} `json:"Config"`
			}
			if json.Unmarshal(o, &c) != nil {
				continue
			}
			image, envList := c.Image, c.Spec.Process.Env
			if envList == nil {
				image, envList = c.Config.Image, c.Config.Env
			}
			if !strings.Contains(image, "amazon-k8s-cni:") || strings.Contains(image, "amazon-k8s-cni-init") {
				continue
			}
			env := map[string]string{}
			for _, kv := range envList {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			a.env, a.envSource, a.envFull = env, name, true
			if v, err := eni.VersionFromImage(image); err == nil {
				a.cniVersion, a.cniVersionFrom = v.String(), name
			}
			return
		}
	}
	a.envErrs = append(a.envErrs, fmt.Sprintf("%s: no amazon-k8s-cni container found", name))
}

// readIO parses io_throttling.txt: "PID Name Block IO Delay (centisconds)" then "pid (comm) ticks".
func (a *analysis) readIO(r io.Reader) error {
	a.ioRead = true
	return a.lines.eachLine(r, func(n int, line []byte) {
		f := strings.Fields(string(line))
		if len(f) < 3 {
			return
		}
		pid, err1 := strconv.Atoi(f[0])
		ticks, err2 := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err1 != nil || err2 != nil || ticks <= 0 {
			return // the header, or a line without delay
		}
		name := strings.Trim(strings.Join(f[1:len(f)-1], " "), "()")
		a.ioTop = append(a.ioTop, ioProc{pid: pid, name: name, delay: time.Duration(ticks) * 10 * time.Millisecond})
	})
}
