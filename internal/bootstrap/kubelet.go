package bootstrap

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// MaxLine is the longest line prefix a check sees; longer lines are cut there, as bundle's log
// scanner cuts them.
const MaxLine = 64 << 10

var (
	reBootstrapLine = regexp.MustCompile(`bootstrap\.sh|KUBELET_EXTRA_ARGS|kubelet-extra-args`)
	reFlag          = regexp.MustCompile(`--(max-pods|registry-qps|registry-burst|serialize-image-pulls|kube-api-qps|kube-api-burst|container-runtime-endpoint|container-runtime)(?:=|\s+)([^\s'"\\]+)`)
	reDocSeparator  = regexp.MustCompile(`(?m)^---\s*$`)
)

// EachLine calls fn for every line of body (without its line ending, cut at MaxLine), numbering
// from 1.
func EachLine(body []byte, fn func(n int, line []byte)) {
	n := 0
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		n++
		if len(line) > MaxLine {
			line = line[:MaxLine]
		}
		fn(n, bytes.TrimRight(line, "\r"))
	}
}

// Flags are the kubelet flags that override its configuration, as read from command lines.
type Flags struct {
	Config rules.KubeletConfig
	// Seen: a flag of interest was on a command line (even with a value that did not parse).
	Seen bool
	// RuntimeEndpoints are the values of --container-runtime-endpoint, in order.
	RuntimeEndpoints []string
}

// ParseFlags reads the kubelet flags of interest on the command lines of text (the kubelet's
// unit, a bootstrap.sh line with --kubelet-extra-args); lines that are comments are skipped, and
// a flag given twice keeps its last value, as in the kubelet.
func ParseFlags(text string) Flags {
	var f Flags
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range reFlag.FindAllStringSubmatch(line, -1) {
			flag, val := m[1], m[2]
			f.Seen = true
			switch flag {
			case "max-pods":
				setInt(&f.Config.MaxPods, val)
			case "registry-qps":
				setInt(&f.Config.RegistryPullQPS, val)
			case "registry-burst":
				setInt(&f.Config.RegistryBurst, val)
			case "kube-api-qps":
				setInt(&f.Config.KubeAPIQPS, val)
			case "kube-api-burst":
				setInt(&f.Config.KubeAPIBurst, val)
			case "serialize-image-pulls":
				if b, err := strconv.ParseBool(val); err == nil {
					f.Config.SerializeImagePulls = &b
				}
			case "container-runtime-endpoint":
				f.RuntimeEndpoints = append(f.RuntimeEndpoints, val)
			}
		}
	}
	return f
}

func setInt(dst **int32, val string) {
	if n, err := strconv.ParseInt(val, 10, 32); err == nil {
		v := int32(n)
		*dst = &v
	}
}

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1) these checks read.
type nodeConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// Kubelet is what user data asks the kubelet to run with.
type Kubelet struct {
	Config rules.KubeletConfig
	// Set: some part set a kubelet setting; Source names the part (and NodeConfig field) that
	// set max pods last, or else the first that set anything.
	Set    bool
	Source string
	// NodeConfig: a part is an AL2023 NodeConfig (nodeadm), so the node runs AL2023.
	NodeConfig bool
}

// Kubelet reads the kubelet settings the parts give, in order (a later part wins, as the
// bootstrap runs them): the flags of the uncommented bootstrap.sh and --kubelet-extra-args lines
// of scripts (AL2), and each NodeConfig's spec.kubelet.config and spec.kubelet.flags (AL2023).
// What cannot be parsed is added to the problems.
func (u *UserData) Kubelet() Kubelet {
	var k Kubelet
	for _, p := range u.Parts {
		switch p.Kind {
		case KindScript:
			EachLine(p.Body, func(_ int, line []byte) {
				if bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) || !reBootstrapLine.Match(line) {
					return
				}
				k.flags(p.Name, string(line))
			})
		case KindNodeConfig:
			k.NodeConfig = true
			u.readNodeConfig(p, &k)
		}
	}
	return k
}

func (k *Kubelet) flags(src, line string) {
	before := k.Config
	f := ParseFlags(line)
	if f.Seen {
		k.Config = k.Config.Merge(f.Config)
		if before.MaxPods != k.Config.MaxPods || !k.Set {
			k.Source = src
		}
		k.Set = true
	}
}

func (u *UserData) readNodeConfig(p Part, k *Kubelet) {
	for i, doc := range reDocSeparator.Split(string(p.Body), -1) {
		if !reNodeConfigKind.MatchString(doc) {
			continue
		}
		var nc nodeConfig
		if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
			u.problem("%s: NodeConfig (document %d): %v", p.Name, i+1, err)
			continue
		}
		if nc.Spec.Kubelet.Config != nil {
			raw, _ := json.Marshal(nc.Spec.Kubelet.Config)
			c, err := rules.ParseKubeletConfigFile(raw)
			if err != nil {
				u.problem("%s: NodeConfig spec.kubelet.config: %v", p.Name, err)
			} else {
				k.Config = k.Config.Merge(c)
				k.Set, k.Source = true, p.Name+" spec.kubelet.config"
			}
		}
		if len(nc.Spec.Kubelet.Flags) > 0 {
			k.flags(p.Name+" spec.kubelet.flags", "kubelet-extra-args "+strings.Join(nc.Spec.Kubelet.Flags, " "))
		}
	}
}
