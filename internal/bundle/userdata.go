package bundle

import (
	"bytes"
	"compress/gzip"
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
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// MaxUserDataSize bounds --user-data. EC2 accepts 16 KB of user data (before base64); a gzip-free
// file far larger than that is not user data.
const MaxUserDataSize = 1 << 20

// Bounds on user data once decoded: parts, nesting, what gzip may inflate to, and how many
// problems are listed.
const (
	// maxUserDataParts counts every MIME part met, read or not, nested or not.
	maxUserDataParts = 64
	maxMIMEDepth     = 3
	// maxUserDataInflated bounds what gzip-compressed user data and parts inflate to, all of
	// them together. EC2 takes 16 KB of user data; cloud-init runs what is in it.
	maxUserDataInflated = 4 << 20
	// maxUserDataProblems are listed as NK635 findings; the rest are counted in one more.
	maxUserDataProblems = 10
	// partTypeInName is how much of a part's Content-Type names it.
	partTypeInName = 64
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
	// reCloudInitStart is how cloud-init recognises user data that is not MIME: by its first
	// line (cloud-init's handlers: a script, cloud-config, an include list, a boothook, a part
	// handler, a jinja template).
	reCloudInitStart = regexp.MustCompile(`^(?:#!|#cloud-config|#cloud-boothook|#include|#part-handler|#upstart-job|## template: *jinja)`)
	// reBase64 is text that is only base64 (what describe-instance-attribute returns).
	reBase64 = regexp.MustCompile(`^[A-Za-z0-9+/\s]+=*\s*$`)
)

// userDataReader splits user data into parts, decoding and decompressing as cloud-init does,
// and keeps the problems met, bounded.
type userDataReader struct {
	parts    []userDataPart
	problems []string
	dropped  int    // problems past maxUserDataProblems
	capped   string // the part cap reached: always listed
	seen     int    // MIME parts met
	inflated int64  // bytes out of gzip so far
}

func (u *userDataReader) problem(format string, args ...any) {
	if len(u.problems) >= maxUserDataProblems {
		u.dropped++
		return
	}
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

// allProblems lists the problems, the last saying how many more there were.
func (u *userDataReader) allProblems() []string {
	out := u.problems
	if u.dropped > 0 {
		out = append(out, fmt.Sprintf("%d more problems not listed (the first %d are)", u.dropped, maxUserDataProblems))
	}
	if u.capped != "" {
		out = append(out, u.capped)
	}
	return out
}

// gunzip decompresses a gzip stream within what is left of maxUserDataInflated.
func (u *userDataReader) gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	left := maxUserDataInflated - u.inflated
	out, err := io.ReadAll(io.LimitReader(zr, left+1))
	u.inflated += int64(len(out))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if int64(len(out)) > left {
		return nil, fmt.Errorf("gzip: inflates past %d bytes of user data", maxUserDataInflated)
	}
	return out, nil
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// userDataKind says what cloud-init or nodeadm makes of data: "mime", "nodeconfig", "script",
// or "" for nothing they run.
func userDataKind(data []byte) string {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch {
	case reMIMEStart.Match(trimmed):
		return "mime"
	case reNodeConfigKind.Match(data):
		return "nodeconfig"
	case reCloudInitStart.Match(trimmed):
		return "script"
	}
	return ""
}

// ErrUserDataNotRecognised is wrapped by the error for --user-data that holds nothing cloud-init
// or nodeadm would run.
var ErrUserDataNotRecognised = fmt.Errorf("%w: not user data", ErrNotRecognised)

// CheckUserData reads user data as Analyze does and fails when nothing in it is user data that
// cloud-init or nodeadm would run, saying what was looked for.
func CheckUserData(name string, data []byte) error {
	_, err := splitUserData(name, data)
	return err
}

// splitUserData recognises what the user data is, as EC2 hands it to the node or as the EC2 API
// shows it: gzip-compressed (cloud-init decompresses it), base64 (describe-instance-attribute
// --attribute userData, a launch template's UserData), MIME multi-part (launch templates,
// Karpenter, Terraform's cloudinit_config), an AL2023 NodeConfig, or a script or cloud-config.
// The reader returned holds the parts and the problems of parts that could not be read; err
// says that nothing could.
func splitUserData(name string, data []byte) (*userDataReader, error) {
	u := &userDataReader{}
	body, how := data, ""
	if userDataKind(body) == "" && !isGzip(body) && reBase64.Match(body) {
		if dec, derr := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil))); derr == nil {
			body, how = dec, " (decoded from base64)"
		}
	}
	if isGzip(body) {
		out, gerr := u.gunzip(body)
		if gerr != nil {
			return nil, fmt.Errorf("%w: --user-data %s%s: %w", ErrUserDataNotRecognised, quoteName(name), how, gerr)
		}
		body, how = out, how+" (decompressed)"
	}
	switch userDataKind(body) {
	case "mime":
		u.readMIMEDocument(name, body, 0)
	case "nodeconfig":
		u.parts = append(u.parts, userDataPart{name: name, kind: "nodeconfig", body: body})
	case "script":
		u.parts = append(u.parts, userDataPart{name: name, kind: "script", body: body})
	default:
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, fmt.Errorf("%w: --user-data %s%s is empty", ErrUserDataNotRecognised, quoteName(name), how)
		}
		return nil, fmt.Errorf("%w: --user-data %s%s is nothing cloud-init or nodeadm runs: looked for a first line of #! (a script), #cloud-config or another cloud-init type, MIME headers (MIME-Version:, Content-Type:), or a NodeConfig (kind: NodeConfig); gzip and base64 of these are decoded",
			ErrUserDataNotRecognised, quoteName(name), how)
	}
	return u, nil
}

// readMIMEDocument reads a MIME document: its headers, then its body by type.
func (u *userDataReader) readMIMEDocument(name string, data []byte, depth int) {
	msg, err := mail.ReadMessage(bytes.NewReader(bytes.TrimLeft(data, " \t\r\n")))
	if err != nil {
		u.problem("%s: MIME headers: %v", name, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(msg.Body, MaxUserDataSize))
	if err != nil {
		u.problem("%s: %v", name, err)
		return
	}
	u.splitMIME(name, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), body, depth)
}

// gzipTypes are the Content-Types cloud-init decompresses before it looks at a part's content
// (cloudinit/user_data.py DECOMP_TYPES).
var gzipTypes = map[string]bool{
	"application/gzip": true, "application/gzip-compressed": true, "application/gzipped": true,
	"application/x-compress": true, "application/x-compressed": true, "application/x-gunzip": true,
	"application/x-gzip": true, "application/x-gzip-compressed": true,
}

func (u *userDataReader) splitMIME(name, contentType, encoding string, body []byte, depth int) {
	if strings.EqualFold(strings.TrimSpace(encoding), "base64") {
		dec, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil)))
		if err != nil {
			u.problem("%s: base64: %v", name, err)
			return
		}
		body = dec
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = "text/x-shellscript"
	}
	if gzipTypes[mediaType] || isGzip(body) {
		out, err := u.gunzip(body)
		if err != nil {
			u.problem("%s: %v", name, err)
			return
		}
		// What was compressed is known by its content only, as cloud-init finds it.
		switch userDataKind(out) {
		case "mime":
			if depth >= maxMIMEDepth {
				u.problem("%s: MIME parts nested deeper than %d", name, maxMIMEDepth)
				return
			}
			u.readMIMEDocument(name, out, depth+1)
		case "nodeconfig":
			u.parts = append(u.parts, userDataPart{name: name, kind: "nodeconfig", body: out})
		case "script":
			u.parts = append(u.parts, userDataPart{name: name, kind: "script", body: out})
		default:
			u.problem("%s: the decompressed part is no script, cloud-config, MIME or NodeConfig; cloud-init does not run it", name)
		}
		return
	}
	switch {
	case strings.HasPrefix(mediaType, "multipart/"):
		if depth >= maxMIMEDepth {
			u.problem("%s: MIME parts nested deeper than %d", name, maxMIMEDepth)
			return
		}
		if params["boundary"] == "" {
			u.problem("%s: %s without a boundary", name, mediaType)
			return
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for i := 1; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				return
			}
			// Every part counts, whether it can be read or not: 960 KB of bad parts once
			// gave 12,000 problems.
			if u.seen++; u.seen > maxUserDataParts {
				if u.capped == "" {
					u.capped = fmt.Sprintf("%s: more than %d parts; the rest is not read", name, maxUserDataParts)
				}
				return
			}
			if err != nil {
				u.problem("%s: part %d: %v", name, i, err)
				return
			}
			pb, err := io.ReadAll(io.LimitReader(p, MaxUserDataSize))
			if err != nil {
				u.problem("%s: part %d: %v", name, i, err)
				return
			}
			ct := p.Header.Get("Content-Type")
			pname := fmt.Sprintf("%s part %d (%s)", name, i, textsafe.ClipRawBytes(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]), partTypeInName))
			u.splitMIME(pname, ct, p.Header.Get("Content-Transfer-Encoding"), pb, depth+1)
		}
	case mediaType == "application/node.eks.aws" || reNodeConfigKind.Match(body):
		u.parts = append(u.parts, userDataPart{name: name, kind: "nodeconfig", body: body})
	default:
		// text/x-shellscript, text/cloud-config (runcmd lines are commands too), boothooks.
		u.parts = append(u.parts, userDataPart{name: name, kind: "script", body: body})
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
	u, err := splitUserData(name, data)
	if err != nil {
		// Analyze refuses such user data first; should it get here, it is a problem.
		u = &userDataReader{}
		u.problem("%v", err)
	}
	for _, p := range u.parts {
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
			a.readNodeConfig(p, u)
		}
	}
	a.userDataProblems = append(a.userDataProblems, u.allProblems()...)
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

func (a *analysis) readNodeConfig(p userDataPart, u *userDataReader) {
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(p.body), -1) {
		if !reNodeConfigKind.MatchString(doc) {
			continue
		}
		var nc nodeConfig
		if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
			u.problem("%s: NodeConfig (document %d): %v", p.name, i+1, err)
			continue
		}
		if nc.Spec.Kubelet.Config != nil {
			raw, _ := json.Marshal(nc.Spec.Kubelet.Config)
			c, err := rules.ParseKubeletConfigFile(raw)
			if err != nil {
				u.problem("%s: NodeConfig spec.kubelet.config: %v", p.name, err)
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
