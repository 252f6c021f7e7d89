package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// MaxUserDataSize bounds --user-data. EC2 accepts 16 KB of user data (before base64); a gzip-free
// file far larger than that is not user data.
const MaxUserDataSize = 1 << 20

// Bounds on MIME user data: parts and nesting.
const (
	maxUserDataParts = 64
	maxMIMEDepth     = 3
)

// userDataPart is one piece of user data: a shell script (or cloud-config, whose commands are
// scanned the same way) or an AL2023 nodeadm NodeConfig.
type userDataPart struct {
	name string
	kind string // "script" or "nodeconfig"
	body []byte
}

var (
	reNodeConfigKind = regexp.MustCompile(`(?m)^kind:\s*NodeConfig\s*$`)
	reMIMEStart      = regexp.MustCompile(`(?i)^(?:MIME-Version|Content-Type):`)
	reBootstrapLine  = regexp.MustCompile(`bootstrap\.sh|KUBELET_EXTRA_ARGS|kubelet-extra-args`)
)

// splitUserData recognises what the user data is: MIME multi-part (as launch templates and
// Karpenter write it), an AL2023 NodeConfig, or a shell script. problems lists parts that
// could not be read.
func splitUserData(name string, data []byte) (parts []userDataPart, problems []string) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case reMIMEStart.Match(trimmed):
		msg, err := mail.ReadMessage(bytes.NewReader(trimmed))
		if err != nil {
			return nil, []string{fmt.Sprintf("%s: MIME headers: %v", name, err)}
		}
		body, err := io.ReadAll(io.LimitReader(msg.Body, MaxUserDataSize))
		if err != nil {
			return nil, []string{fmt.Sprintf("%s: %v", name, err)}
		}
		splitMIME(name, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), body, 0, &parts, &problems)
	case reNodeConfigKind.Match(data):
		parts = append(parts, userDataPart{name: name, kind: "nodeconfig", body: data})
	default:
		parts = append(parts, userDataPart{name: name, kind: "script", body: data})
	}
	return parts, problems
}

func splitMIME(name, contentType, encoding string, body []byte, depth int, parts *[]userDataPart, problems *[]string) {
	if strings.EqualFold(strings.TrimSpace(encoding), "base64") {
		dec, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: base64: %v", name, err))
			return
		}
		body = dec
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = "text/x-shellscript"
	}
	switch {
	case strings.HasPrefix(mediaType, "multipart/"):
		if depth >= maxMIMEDepth {
			*problems = append(*problems, fmt.Sprintf("%s: MIME parts nested deeper than %d", name, maxMIMEDepth))
			return
		}
		if params["boundary"] == "" {
			*problems = append(*problems, fmt.Sprintf("%s: %s without a boundary", name, mediaType))
			return
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for i := 1; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				return
			}
			if err != nil {
				*problems = append(*problems, fmt.Sprintf("%s: part %d: %v", name, i, err))
				return
			}
			if len(*parts) >= maxUserDataParts {
				*problems = append(*problems, fmt.Sprintf("%s: more than %d parts; the rest is not read", name, maxUserDataParts))
				return
			}
			pb, err := io.ReadAll(io.LimitReader(p, MaxUserDataSize))
			if err != nil {
				*problems = append(*problems, fmt.Sprintf("%s: part %d: %v", name, i, err))
				return
			}
			ct := p.Header.Get("Content-Type")
			pname := fmt.Sprintf("%s part %d (%s)", name, i, strings.SplitN(ct, ";", 2)[0])
			splitMIME(pname, ct, p.Header.Get("Content-Transfer-Encoding"), pb, depth+1, parts, problems)
		}
	case mediaType == "application/node.eks.aws" || reNodeConfigKind.Match(body):
		*parts = append(*parts, userDataPart{name: name, kind: "nodeconfig", body: body})
	default:
		// text/x-shellscript, text/cloud-config (runcmd lines are commands too), boothooks.
		*parts = append(*parts, userDataPart{name: name, kind: "script", body: body})
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

// readUserData runs the bootstrap checks on the user data itself and takes the kubelet settings
// it gives (bootstrap.sh --kubelet-extra-args, NodeConfig spec.kubelet) as a configuration source.
func (a *analysis) readUserData(name string, data []byte) {
	a.userDataRead = true
	parts, problems := splitUserData(name, data)
	for _, p := range parts {
		switch p.kind {
		case "script":
			_ = a.bootstrap.scan(p.name, bytes.NewReader(p.body), func(_ int, line []byte) {
				a.hintsFrom(line)
				if bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) || !reBootstrapLine.Match(line) {
					return
				}
				a.readUserDataFlags(p.name, line)
			})
		case "nodeconfig":
			a.osHint = rules.OSAmazonLinux2023
			a.readNodeConfig(p, &problems)
		}
	}
	a.userDataProblems = append(a.userDataProblems, problems...)
}

func (a *analysis) readUserDataFlags(src string, line []byte) {
	before := a.userDataCfg
	var flags analysis
	flags.readFlags(line)
	if flags.flagsSeen {
		a.userDataCfg = a.userDataCfg.Merge(flags.flags)
		if before.MaxPods != a.userDataCfg.MaxPods || !a.userDataSet {
			a.userDataSrc = src
		}
		a.userDataSet = true
	}
}

func (a *analysis) readNodeConfig(p userDataPart, problems *[]string) {
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(p.body), -1) {
		if !reNodeConfigKind.MatchString(doc) {
			continue
		}
		var nc nodeConfig
		if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: NodeConfig (document %d): %v", p.name, i+1, err))
			continue
		}
		if nc.Spec.Kubelet.Config != nil {
			raw, _ := json.Marshal(nc.Spec.Kubelet.Config)
			c, err := rules.ParseKubeletConfigFile(raw)
			if err != nil {
				*problems = append(*problems, fmt.Sprintf("%s: NodeConfig spec.kubelet.config: %v", p.name, err))
			} else {
				a.userDataCfg = a.userDataCfg.Merge(c)
				a.userDataSet, a.userDataSrc = true, p.name+" spec.kubelet.config"
			}
		}
		if len(nc.Spec.Kubelet.Flags) > 0 {
			a.readUserDataFlags(p.name+" spec.kubelet.flags", []byte("kubelet-extra-args "+strings.Join(nc.Spec.Kubelet.Flags, " ")))
		}
	}
}

// reportUserDataProblems reports the parts of --user-data that could not be read.
func (a *analysis) reportUserDataProblems(rep *findings.Report) {
	for _, p := range a.userDataProblems {
		rep.Add(RuleUserDataUnreadable.New("--user-data", "%s", p))
	}
}

// reportUserDataConfig runs the configuration checks on a journal's companion user data.
func (a *analysis) reportUserDataConfig(rep *findings.Report) {
	if a.userDataSet {
		a.reportConfig(rep)
	}
}
