package bootstrap

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// MaxUserDataSize bounds the user data read. EC2 accepts 16 KB of user data (before base64); a
// gzip-free text far larger than that is not user data.
const MaxUserDataSize = 1 << 20

// Bounds on user data once decoded: parts, nesting, what gzip may inflate to, and how many
// problems are listed.
const (
	// MaxParts counts every MIME part met, read or not, nested or not.
	MaxParts     = 64
	maxMIMEDepth = 3
	// MaxInflated bounds what gzip-compressed user data and parts inflate to, all of them
	// together. EC2 takes 16 KB of user data; cloud-init runs what is in it.
	MaxInflated = 4 << 20
	// MaxProblems are listed; the rest are counted in one more.
	MaxProblems = 10
	// partTypeInName is how much of a part's Content-Type names it.
	partTypeInName = 64
)

// The kinds of Part.
const (
	// KindScript is a shell script, or cloud-config, whose commands are scanned the same way.
	KindScript = "script"
	// KindNodeConfig is an AL2023 nodeadm NodeConfig.
	KindNodeConfig = "nodeconfig"
)

// Part is one piece of user data that cloud-init or nodeadm runs.
type Part struct {
	// Name says where the part is ("user-data part 2 (text/x-shellscript)").
	Name string
	Kind string
	Body []byte
}

var (
	reNodeConfigKind = regexp.MustCompile(`(?m)^kind:\s*NodeConfig\s*$`)
	reMIMEStart      = regexp.MustCompile(`(?i)^(?:MIME-Version|Content-Type):`)
	// reCloudInitStart is how cloud-init recognises user data that is not MIME: by its first
	// line (cloud-init's handlers: a script, cloud-config, an include list, a boothook, a part
	// handler, a jinja template).
	reCloudInitStart = regexp.MustCompile(`^(?:#!|#cloud-config|#cloud-boothook|#include|#part-handler|#upstart-job|## template: *jinja)`)
	// reBase64 is text that is only base64 (what describe-instance-attribute and a launch
	// template's UserData return).
	reBase64 = regexp.MustCompile(`^[A-Za-z0-9+/\s]+=*\s*$`)
)

// UserData is user data split into the parts cloud-init or nodeadm run, with the problems met
// on the way (bounded).
type UserData struct {
	Parts []Part

	problems []string
	dropped  int    // problems past MaxProblems
	capped   string // the part cap reached: always listed
	seen     int    // MIME parts met
	inflated int64  // bytes out of gzip so far
}

func (u *UserData) problem(format string, args ...any) {
	if len(u.problems) >= MaxProblems {
		u.dropped++
		return
	}
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

// Problems lists what could not be read, the last saying how many more there were.
func (u *UserData) Problems() []string {
	out := u.problems
	if u.dropped > 0 {
		out = append(out, findings.Noun{One: "more problem", Many: "more problems"}.Count(u.dropped)+fmt.Sprintf(" not listed (the first %d are)", MaxProblems))
	}
	if u.capped != "" {
		out = append(out, u.capped)
	}
	return out
}

// gunzip decompresses a gzip stream within what is left of MaxInflated.
func (u *UserData) gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	left := MaxInflated - u.inflated
	out, err := io.ReadAll(io.LimitReader(zr, left+1))
	u.inflated += int64(len(out))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if int64(len(out)) > left {
		return nil, fmt.Errorf("gzip: inflates past %d bytes of user data", MaxInflated)
	}
	return out, nil
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// kindOf says what cloud-init or nodeadm makes of data: "mime", KindNodeConfig, KindScript, or
// "" for nothing they run.
func kindOf(data []byte) string {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch {
	case reMIMEStart.Match(trimmed):
		return "mime"
	case reNodeConfigKind.Match(data):
		return KindNodeConfig
	case reCloudInitStart.Match(trimmed):
		return KindScript
	}
	return ""
}

// ErrNotUserData is wrapped by Split's error for data that holds nothing cloud-init or nodeadm
// would run.
var ErrNotUserData = errors.New("not user data")

// Split recognises what the user data is, as EC2 hands it to the node or as the EC2 API shows
// it: gzip-compressed (cloud-init decompresses it), base64 (describe-instance-attribute
// --attribute userData, a launch template version's UserData), MIME multi-part (launch
// templates of managed node groups, Karpenter, Terraform's cloudinit_config), an AL2023
// NodeConfig, or a script or cloud-config. name labels the parts and problems; subject names the
// data in the error (for example `--user-data "FILE"`). The UserData returned holds the parts and
// the problems of parts that could not be read; an error, wrapping ErrNotUserData, says that
// nothing could.
func Split(subject, name string, data []byte) (*UserData, error) {
	u := &UserData{}
	body, how := data, ""
	if kindOf(body) == "" && !isGzip(body) && reBase64.Match(body) {
		if dec, derr := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(body), nil))); derr == nil {
			body, how = dec, " (decoded from base64)"
		}
	}
	if isGzip(body) {
		out, gerr := u.gunzip(body)
		if gerr != nil {
			return nil, fmt.Errorf("%w: %s%s: %w", ErrNotUserData, subject, how, gerr)
		}
		body, how = out, how+" (decompressed)"
	}
	switch kindOf(body) {
	case "mime":
		u.readMIMEDocument(name, body, 0)
	case KindNodeConfig:
		u.Parts = append(u.Parts, Part{Name: name, Kind: KindNodeConfig, Body: body})
	case KindScript:
		u.Parts = append(u.Parts, Part{Name: name, Kind: KindScript, Body: body})
	default:
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, fmt.Errorf("%w: %s%s is empty", ErrNotUserData, subject, how)
		}
		return nil, fmt.Errorf("%w: %s%s is nothing cloud-init or nodeadm runs: looked for a first line of #! (a script), #cloud-config or another cloud-init type, MIME headers (MIME-Version:, Content-Type:), or a NodeConfig (kind: NodeConfig); gzip and base64 of these are decoded",
			ErrNotUserData, subject, how)
	}
	return u, nil
}

// readMIMEDocument reads a MIME document: its headers, then its body by type.
func (u *UserData) readMIMEDocument(name string, data []byte, depth int) {
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

func (u *UserData) splitMIME(name, contentType, encoding string, body []byte, depth int) {
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
		switch kindOf(out) {
		case "mime":
			if depth >= maxMIMEDepth {
				u.problem("%s: MIME parts nested deeper than %d", name, maxMIMEDepth)
				return
			}
			u.readMIMEDocument(name, out, depth+1)
		case KindNodeConfig:
			u.Parts = append(u.Parts, Part{Name: name, Kind: KindNodeConfig, Body: out})
		case KindScript:
			u.Parts = append(u.Parts, Part{Name: name, Kind: KindScript, Body: out})
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
			if u.seen++; u.seen > MaxParts {
				if u.capped == "" {
					u.capped = fmt.Sprintf("%s: more than %d parts; the rest is not read", name, MaxParts)
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
		u.Parts = append(u.Parts, Part{Name: name, Kind: KindNodeConfig, Body: body})
	default:
		// text/x-shellscript, text/cloud-config (runcmd lines are commands too), boothooks.
		u.Parts = append(u.Parts, Part{Name: name, Kind: KindScript, Body: body})
	}
}
