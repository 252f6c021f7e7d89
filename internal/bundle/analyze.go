package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Options tune an analysis.
type Options struct {
	Limits
	// InstanceType overrides the type found in the bundle (ipamd.log); needed when it is absent.
	InstanceType string
	// ReservedENIs are ENIs kept from pods besides custom networking and the trunk ENI.
	ReservedENIs int
	// IODelayThreshold is the aggregated block IO delay from which a process is reported
	// (default 10 s).
	IODelayThreshold time.Duration
	// UserData is the node's EC2 user data (--user-data): a shell script, MIME multi-part or an
	// AL2023 NodeConfig. UserDataName labels it.
	UserData     []byte
	UserDataName string
	// MinCNIVersion is the VPC CNI version below which a warning is given (zero: doctor's default).
	MinCNIVersion eni.Version
	// Now stamps the report (default time.Now).
	Now time.Time
}

// DefaultIODelayThreshold: ten seconds of a process's life spent waiting for block IO.
const DefaultIODelayThreshold = 10 * time.Second

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

// AnalyzeFile analyses a bundle given as a .tar.gz, as its unpacked directory, or a kubelet
// journal (journalctl -u kubelet output, gzip-compressed or not). Nothing is ever written to disk.
func AnalyzeFile(file string, o Options) (*findings.Report, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		a := newAnalysis(o.withDefaults())
		a.kind = InputDirectory
		if err := walkDir(file, o.Limits, a.visit); err != nil {
			return nil, err
		}
		return a.finish(filepath.Base(filepath.Clean(file)) + "/"), nil
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file or a directory", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Analyze(f, filepath.Base(file), o)
}

func (o Options) withDefaults() Options {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.IODelayThreshold <= 0 {
		o.IODelayThreshold = DefaultIODelayThreshold
	}
	return o
}

// Analyze reads a bundle from r (gzip-compressed tar) or a kubelet journal (gzip-compressed or
// plain) and returns its findings. name labels the report.
func Analyze(r io.Reader, name string, o Options) (*findings.Report, error) {
	a := newAnalysis(o.withDefaults())
	if err := a.analyzeStream(r, name); err != nil {
		return nil, err
	}
	return a.finish(name), nil
}

// finish runs the checks that combine members and builds the report.
func (a *analysis) finish(name string) *findings.Report {
	if a.o.UserData != nil {
		n := a.o.UserDataName
		if n == "" {
			n = "user-data"
		}
		a.readUserData(n, a.o.UserData)
	}
	rep := findings.NewReport("bundle", name, a.o.Now, a.sections()...)
	a.report(rep)
	return rep
}

// sections are the report's sections for this input: a journal shows only what it can be
// checked for, so that an empty section never reads as "checked, nothing found".
func (a *analysis) sections() [][2]string {
	if a.kind != InputJournal {
		return Sections
	}
	keep := map[string]bool{SectionKubeletLog: true, SectionCNILog: true}
	if a.userDataRead {
		keep[SectionBootstrap] = true
	}
	if a.userDataSet {
		keep[doctor.SectionNodes], keep[doctor.SectionKubelet], keep[doctor.SectionAWSNode] = true, true, true
	}
	var out [][2]string
	for _, s := range Sections {
		if keep[s[0]] {
			out = append(out, s)
		}
	}
	return out
}

// analysis gathers facts while members stream by; checks that combine members run at the end.
type analysis struct {
	o     Options
	lines *lineReader
	kind  InputKind

	patterns       []*pattern // every log pattern once, in report order
	statusZombie   zombieLines
	evictionZombie zombieLines
	tracedLines    int // "+ cmd" lines in cloud-init-output.log

	// OS and provisioner hints for the max-pods fix (doctor.MaxPodsFix).
	osHint   doctor.NodeOS
	provHint doctor.Provisioner

	// --user-data: read, the kubelet settings it gives, and parts that could not be read.
	userDataRead     bool
	userDataCfg      doctor.KubeletConfig
	userDataSet      bool
	userDataSrc      string
	userDataProblems []string

	kubeletLog *scanner
	cniLog     *scanner
	bootstrap  *scanner

	instanceID     string
	instanceType   string
	instanceSource string
	cniVersion     string
	cniVersionFrom string
	vcpus          int

	configs     map[string]doctor.KubeletConfig // base files by path
	dropins     map[string]doctor.KubeletConfig
	configErrs  []string
	flags       doctor.KubeletConfig
	flagsSeen   bool
	runtimeHint []string // evidence that containerd is the runtime

	env       map[string]string
	envSource string
	envFull   bool
	envErrs   []string

	ioRead bool
	ioTop  []ioProc
}

type ioProc struct {
	pid   int
	name  string
	delay time.Duration
}

var (
	reHostname = regexp.MustCompile(`(?:^|[\s;&|(+'"])(?:hostnamectl\s+(?:--\S+\s+)*set-hostname\s+\S+|hostname\s+(?:-b\s+)?[A-Za-z0-9][A-Za-z0-9.-]*\s*$|--hostname-override[= ]\S+|>\s*/etc/hostname\b)`)
	reFlush    = regexp.MustCompile(`(?:^|[\s;&|(+])ip6?tables(?:-legacy|-nft)?\s(?:[^|;&]*\s)?(?:-F|--flush|-X|--delete-chain)(?:\s|$)`)
	reDocker   = regexp.MustCompile(`(?:^|[\s;&|(+])(?:systemctl\s+(?:--\S+\s+)*(?:start|restart|enable|reload|stop|disable|daemon-reload\s.*)(?:\s+--now)?\s+docker(?:\.service|\.socket)?\b|service\s+docker\s+(?:start|restart|stop|reload)\b)`)
	reIPAMDVer = regexp.MustCompile(`Starting L-IPAMD (v?\d+\.\d+\.\d+\S*)`)
	reInstType = regexp.MustCompile(`Found instance-type: ([a-z0-9-]+\.[a-z0-9-]+)`)
	reFlag     = regexp.MustCompile(`--(max-pods|registry-qps|registry-burst|serialize-image-pulls|kube-api-qps|kube-api-burst|container-runtime-endpoint|container-runtime)(?:=|\s+)([^\s'"\\]+)`)
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
		configs: map[string]doctor.KubeletConfig{},
		dropins: map[string]doctor.KubeletConfig{},
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
	ipamdRefused := &pattern{rule: RuleIPAMDRefused, all: bs("connection refused"), any: bs("127.0.0.1:50051", "ipamd.sock"), what: "connection refused to ipamd"}
	noAddress := &pattern{rule: RuleNoAddress, any: bs("ailed to assign an IP address to container", "no available IP/Prefix addresses"), what: "lines where a pod got no IP address"}
	subnet := &pattern{rule: RuleSubnetExhausted, any: bs("InsufficientFreeAddressesInSubnet", "InsufficientCidrBlocks"), what: "subnet address exhaustion errors"}
	a.kubeletLog = newScanner(
		&pattern{rule: RulePullQPS, all: bs("pull QPS exceeded"), what: `"pull QPS exceeded"`},
		&pattern{rule: RuleLeaseOwner, all: bs("Failed to get node when trying to set owner ref to the node lease"), what: "lease owner reference failures"},
		&pattern{rule: RuleNodeStatus, any: bs("Unable to update node status", "Error updating node status"), what: "node status update failures", onMatch: zombie(&a.statusZombie)},
		&pattern{rule: RuleEvictionStats, all: bs("Eviction manager: failed to get summary stats"), what: "eviction manager summary stats failures", onMatch: zombie(&a.evictionZombie)},
		&pattern{rule: RuleServingCert, all: bs("no serving certificate available for the kubelet"), what: "TLS handshakes refused for want of a serving certificate"},
		ipamdRefused, noAddress, subnet,
	)
	a.cniLog = newScanner(
		ipamdRefused,
		&pattern{rule: RuleIPAMDAPIServer, all: bs("Unable to reach API Server"), what: `"Unable to reach API Server"`},
		&pattern{rule: RuleEC2Throttle, any: bs("RequestLimitExceeded", "ThrottlingException", "Throttling: Rate exceeded"), what: "EC2 throttling errors"},
		noAddress, subnet,
	)
	a.bootstrap = newScanner(
		&pattern{rule: RuleHostname, re: reHostname, what: "hostname changes"},
		&pattern{rule: RuleIptablesFlush, re: reFlush, what: "iptables flushes"},
		&pattern{rule: RuleDocker, re: reDocker, what: "Docker service commands"},
	)
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

// zombieLines counts log lines that say the kubelet's own Node is not found.
type zombieLines struct {
	count int
	node  string
}

func (a *analysis) visit(m Member, r io.Reader) error {
	name := m.Name
	switch {
	case strings.HasPrefix(name, "nodeadm/") || name == "kubelet/config.json":
		a.osHint = doctor.OSAmazonLinux2023 // nodeadm writes these; bootstrap.sh does not
	case name == "kubelet/kubelet-config.json" && a.osHint == doctor.OSUnknown:
		a.osHint = doctor.OSAmazonLinux2
	}
	switch {
	case name == pKubeletLog:
		return a.kubeletLog.scan(name, r, nil)
	case strings.HasPrefix(name, pCNILogDir) && isCNILog(path.Base(name)):
		return a.cniLog.scan(name, r, func(_ int, line []byte) {
			if a.instanceType == "" {
				if mm := reInstType.FindSubmatch(line); mm != nil {
					a.instanceType, a.instanceSource = string(mm[1]), name
				}
			}
			if mm := reIPAMDVer.FindSubmatch(line); mm != nil {
				// The last start wins: a log may span an upgrade.
				a.cniVersion, a.cniVersionFrom = string(mm[1]), name
			}
		})
	case name == pCloudInitOut || name == pUserData:
		return a.bootstrap.scan(name, r, func(_ int, line []byte) {
			if name == pCloudInitOut && bytes.HasPrefix(line, []byte("+ ")) {
				a.tracedLines++
			}
			a.hintsFrom(line)
		})
	case name == pIOThrottling:
		return a.readIO(r)
	}

	// Everything else that is read is small and read whole.
	want := name == pInstanceID || name == pProcStat || name == pKubeletService || name == pIPAMDEnv ||
		name == pCNIVarsCtrd || name == pCNIVarsDocker || isKubeletConfig(name) ||
		name == "containerd/containerd-version.txt" || name == "containerd/containerd-config.txt"
	if !want {
		return nil
	}
	if m.Size > smallFileCap {
		return unsafeErr("member %q is %d bytes, more than %d for a file of its kind", name, m.Size, smallFileCap)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: reading %s: %w", ErrUnsafeArchive, quoteName(name), err)
	}
	switch {
	case name == pInstanceID:
		a.instanceID = strings.TrimSpace(string(data))
	case name == pProcStat:
		for _, l := range bytes.Split(data, []byte("\n")) {
			if reCPU.Match(l) {
				a.vcpus++
			}
		}
	case name == pKubeletService:
		a.readFlags(data)
	case name == pIPAMDEnv:
		a.readIPAMDEnv(data)
	case name == pCNIVarsCtrd, name == pCNIVarsDocker:
		a.readContainerEnv(name, data)
	case isKubeletConfig(name):
		c, err := doctor.ParseKubeletConfigFile(data)
		if err != nil {
			a.configErrs = append(a.configErrs, fmt.Sprintf("%s: %v", name, err))
			return nil
		}
		var rt struct {
			Endpoint string `json:"containerRuntimeEndpoint"`
		}
		if json.Unmarshal(data, &rt) == nil && strings.Contains(rt.Endpoint, "containerd") {
			a.runtimeHint = append(a.runtimeHint, name+": containerRuntimeEndpoint "+rt.Endpoint)
		}
		if strings.HasPrefix(name, "kubelet/config.json.d/") {
			a.dropins[name] = c
		} else {
			a.configs[name] = c
		}
	case strings.HasPrefix(name, "containerd/"):
		if len(bytes.TrimSpace(data)) > 0 {
			a.runtimeHint = append(a.runtimeHint, name+" present (containerd running when collected)")
		}
	}
	return nil
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
		a.osHint = doctor.OSAmazonLinux2023
	case bytes.Contains(line, []byte("/etc/eks/bootstrap.sh")) && a.osHint == doctor.OSUnknown:
		a.osHint = doctor.OSAmazonLinux2
	}
	switch {
	case bytes.Contains(line, []byte(doctor.LabelKarpenterNodePool+"=")) || bytes.Contains(line, []byte(doctor.LabelKarpenterProvisioner+"=")):
		a.provHint = doctor.ProvisionerKarpenter
	case bytes.Contains(line, []byte(doctor.LabelEKSNodegroup+"=")) && a.provHint == doctor.ProvisionerUnknown:
		a.provHint = doctor.ProvisionerManagedNodeGroup
	}
}

// readFlags picks the kubelet flags that override configuration from `systemctl cat kubelet`.
func (a *analysis) readFlags(data []byte) {
	a.hintsFrom(data)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range reFlag.FindAllStringSubmatch(line, -1) {
			flag, val := m[1], m[2]
			a.flagsSeen = true
			switch flag {
			case "max-pods":
				setInt(&a.flags.MaxPods, val)
			case "registry-qps":
				setInt(&a.flags.RegistryPullQPS, val)
			case "registry-burst":
				setInt(&a.flags.RegistryBurst, val)
			case "kube-api-qps":
				setInt(&a.flags.KubeAPIQPS, val)
			case "kube-api-burst":
				setInt(&a.flags.KubeAPIBurst, val)
			case "serialize-image-pulls":
				if b, err := strconv.ParseBool(val); err == nil {
					a.flags.SerializeImagePulls = &b
				}
			case "container-runtime-endpoint":
				if strings.Contains(val, "containerd") {
					a.runtimeHint = append(a.runtimeHint, pKubeletService+": --container-runtime-endpoint "+val)
				}
			}
		}
	}
}

func setInt(dst **int32, val string) {
	if n, err := strconv.ParseInt(val, 10, 32); err == nil {
		v := int32(n)
		*dst = &v
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

// criticalProcs run the node: IO delay there delays pods directly.
var criticalProcs = map[string]bool{
	"kubelet": true, "containerd": true, "dockerd": true, "aws-k8s-agent": true, "aws-vpc-cni": true,
	"aws-cni": true, "kube-proxy": true, "containerd-shim": true, "containerd-shim-runc-v2": true,
}

func (a *analysis) report(rep *findings.Report) {
	target := rep.Target
	if a.instanceID != "" {
		rep.Target = target + " (" + textsafe.Clip(a.instanceID, 40) + ")"
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
		res := textsafe.ClipBytes(fileList(h.files), 300)
		switch p.rule.Code {
		case RuleDocker.Code:
			a.reportDocker(rep, p)
			continue
		case RuleNodeStatus.Code:
			if z := a.statusZombie; z.count > 0 {
				f := p.rule.At(findings.Error, res, "%d %s; %d say the Node %s is not found: the Node object was deleted while this kubelet still runs (a zombie kubelet), so it can neither report status nor renew a lease that is owned by its Node",
					h.count, p.what, z.count, quoteName(z.node))
				f.Remediation = "restart the kubelet on the instance so that it registers its Node again (systemctl restart kubelet), or terminate the instance if it was meant to go; then find out what deleted the Node (nodekeeper audit, the cluster autoscaler or Karpenter) and check for leases left behind with nodekeeper leases"
				rep.Add(f.WithEvidence(h.evidence()...))
				continue
			}
		case RuleEvictionStats.Code:
			if z := a.evictionZombie; z.count > 0 {
				rep.Add(p.rule.New(res, "%d %s; %d say the node %s is not found: the Node object was deleted under this kubelet (see NK603)", h.count, p.what, z.count, quoteName(z.node)).WithEvidence(h.evidence()...))
				continue
			}
		case RuleServingCert.Code:
			if fired[RuleHostname.Code] {
				rep.Add(p.rule.New(res, "%d %s; the user data also overrides the hostname (NK631): the node asks for a certificate under a name that is not the instance's EC2 private DNS name, which EKS does not approve", h.count, p.what).
					WithEvidence(append(h.evidence(), "hostname override: "+a.firstEvidence(RuleHostname.Code))...))
				continue
			}
		case RuleHostname.Code:
			if fired[RuleServingCert.Code] {
				f := p.rule.New(res, "%d %s; the kubelet log shows the consequence: no serving certificate (NK605), since EKS approves kubelet-serving CSRs only for the instance's EC2 private DNS name", h.count, p.what)
				rep.Add(f.WithEvidence(append(h.evidence(), "kubelet log: "+a.firstEvidence(RuleServingCert.Code))...))
				continue
			}
		}
		rep.Add(p.rule.New(res, "%d %s", h.count, p.what).WithEvidence(h.evidence()...))
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
	res := textsafe.ClipBytes(fileList(h.files), 300)
	if len(a.runtimeHint) == 0 {
		rep.Add(RuleDocker.At(findings.Info, res,
			"%d %s; the bundle does not show which runtime the kubelet uses", h.count, p.what).WithEvidence(h.evidence()...))
		return
	}
	ev := append(h.evidence(), "containerd is the runtime: "+textsafe.ClipBytes(a.runtimeHint[0], evidenceWidth))
	rep.Add(RuleDocker.New(res, "%d %s while containerd is the container runtime", h.count, p.what).WithEvidence(ev...))
}

// reportUntraced says when cloud-init-output.log was read but shows none of the user data's
// commands: the bootstrap checks saw nothing, which is not the same as nothing wrong.
func (a *analysis) reportUntraced(rep *findings.Report) {
	if !slices.Contains(a.bootstrap.files, pCloudInitOut) || a.tracedLines > 0 || a.userDataRead {
		return
	}
	f := RuleUserDataUntraced.Skip(pCloudInitOut, "no traced commands (\"+ cmd\" lines): the user data runs without `set -x`, so NK631-NK633 could not see what it ran; pass --user-data FILE")
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
	msg := fmt.Sprintf("%d processes waited %s or more for block IO; most: %s (%s)", len(over), a.o.IODelayThreshold, over[0].name, over[0].delay)
	if critical {
		msg += "; node agents (kubelet, containerd, VPC CNI) are among them"
	}
	rep.Add(RuleIODelay.New(pIOThrottling, "%s", msg).WithEvidence(ev...))
}

// kubeletConfig merges what the bundle says about the kubelet's configuration: base file, drop-ins
// in name order, then command-line flags (which win, as in the kubelet).
func (a *analysis) kubeletConfig() (doctor.KubeletConfig, string, bool) {
	var c doctor.KubeletConfig
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
		f.Section = doctor.SectionKubelet
		rep.Add(f)
	}
	node := "node"
	if a.instanceID != "" {
		node = "node/" + a.instanceID
	}
	if !ok {
		f := RuleMissing.Skip("kubelet/config.json", "no kubelet configuration (kubelet/config.json, kubelet/kubelet-config.json) or kubelet flags in the bundle")
		f.Section = doctor.SectionKubelet
		rep.Add(f)
	} else {
		rep.Checked(doctor.SectionKubelet, 1)
		rep.Add(doctor.CheckKubeletConfig(node, src, cfg, cfg.EffectiveMaxPods())...)
	}

	// aws-node settings.
	var settings eni.Settings
	switch {
	case a.env != nil:
		settings = eni.ParseSettings(a.env)
		rep.Checked(doctor.SectionAWSNode, 1)
		in := doctor.CNIInput{Resource: a.envSource, Env: a.env, MinVersion: a.o.MinCNIVersion}
		if v, err := eni.ParseVersion(a.cniVersion); err == nil && a.cniVersion != "" {
			in.Version = &v
		}
		fs := doctor.CheckCNISettings(in)
		if !a.envFull {
			// ipamd's introspection lists only a few settings: absence proves nothing there.
			kept := fs[:0]
			for _, f := range fs {
				if f.Code != doctor.RuleClusterEndpoint.Code {
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
		f.Section = doctor.SectionAWSNode
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
		f.Section = doctor.SectionNodes
		rep.Add(f)
	case itype == "":
		id := ""
		if a.instanceID != "" {
			id = " (" + pInstanceID + " has " + a.instanceID + ", which does not name the type)"
		}
		f := RuleMissing.Skip(node, "instance type unknown: no \"Found instance-type\" line in ipamd.log"+id+"; pass --instance-type")
		f.Section = doctor.SectionNodes
		rep.Add(f)
	default:
		n := doctor.NodeCapacity{Resource: node, InstanceType: itype, CapacityPods: cfg.EffectiveMaxPods()}
		if a.vcpus > 0 {
			n.VCPUs, n.VCPUSource = a.vcpus, pProcStat
		}
		res := doctor.CheckPodCapacity(n, doctor.CNIMode{Settings: settings, Version: a.cniVersion, ReservedENIs: a.o.ReservedENIs})
		if res.Evaluated {
			rep.Checked(doctor.SectionNodes, 1)
		}
		for i := range res.Findings {
			res.Findings[i] = res.Findings[i].WithEvidence(fmt.Sprintf("instance type %s from %s; max pods %d from %s", itype, isrc, cfg.EffectiveMaxPods(), maxPodsSource(cfg, src)))
			if res.Findings[i].Code == doctor.RuleMaxPodsAboveIPs.Code && settings.CustomNetworking {
				// The seed's configuration: custom networking with the bootstrap default max pods.
				res.Findings[i] = res.Findings[i].WithEvidence("custom networking is on: bootstrap.sh needs --use-max-pods false and --kubelet-extra-args '--max-pods=N'; Karpenter needs reservedENIs: 1")
			}
		}
		a.fitMaxPodsFix(res.Findings, res.IPLimit, settings.CustomNetworking)
		rep.Add(res.Findings...)
	}
}

// fitMaxPodsFix adds to NK101/NK409 the max-pods fix for the node's OS and provisioner, as far
// as the input shows them (doctor.MaxPodsFix lists every option when it does not).
func (a *analysis) fitMaxPodsFix(fs []findings.Finding, limit int, customNetworking bool) {
	if limit <= 0 {
		return
	}
	for i := range fs {
		if fs[i].Code == doctor.RuleMaxPodsAboveIPs.Code || fs[i].Code == "NK409" {
			// The same evidence line doctor gives each node.
			fs[i] = fs[i].WithEvidence(fmt.Sprintf("fix for this node (%s, %s): %s", a.osHint, a.provHint,
				doctor.MaxPodsFix(a.osHint, a.provHint, limit, customNetworking)))
		}
	}
}

func maxPodsSource(c doctor.KubeletConfig, src string) string {
	if c.MaxPods == nil {
		return "the kubelet default (not set in " + src + ")"
	}
	return src
}
