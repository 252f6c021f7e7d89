package bootstrap

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

func gz(t *testing.T, s string) []byte { return gzipped.Bytes(t, []byte(s)) }

func b64(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }

const (
	al2Script = "#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh prod --use-max-pods false --kubelet-extra-args '--max-pods=110'\n"
	al2023    = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 58\n"
	// mngMIME is the shape of the user data EKS managed node groups merge into a launch
	// template: a MIME multi-part document with the customer's part and nodeadm's.
	mngMIME = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\nhostnamectl set-hostname worker-1\n\n--//\nContent-Type: application/node.eks.aws\n\n" + al2023 + "\n--//--\n"
)

// TestSplitAndKubelet: every encoding EC2 and the launch-template API hand out is decoded to the
// same parts, and the kubelet settings (max pods) come from the bootstrap.sh line or the
// NodeConfig with the part that set them named.
func TestSplitAndKubelet(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       []byte
		kinds      string
		maxPods    int32
		source     string
		nodeConfig bool
	}{
		{"AL2 script", []byte(al2Script), "script", 110, "ud", false},
		{"AL2 script, gzip and base64", b64(gz(t, al2Script)), "script", 110, "ud", false},
		{"AL2023 NodeConfig", []byte(al2023), "nodeconfig", 58, "ud spec.kubelet.config", true},
		{"managed node group MIME, base64", b64([]byte(mngMIME)), "script,nodeconfig", 58, "ud part 2 (application/node.eks.aws) spec.kubelet.config", true},
		{"MIME, gzip then base64", b64(gz(t, mngMIME)), "script,nodeconfig", 58, "ud part 2 (application/node.eks.aws) spec.kubelet.config", true},
		{"a commented bootstrap line sets nothing", []byte("#!/bin/bash\n# /etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=300'\n"), "script", 0, "", false},
		{"NodeConfig flags win over its config", []byte(al2023 + "    flags:\n    - --max-pods=20\n"), "nodeconfig", 20, "ud spec.kubelet.flags", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Split("test data", "ud", tc.data)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, p := range u.Parts {
				kinds = append(kinds, p.Kind)
			}
			if got := strings.Join(kinds, ","); got != tc.kinds {
				t.Errorf("parts %s, want %s", got, tc.kinds)
			}
			k := u.Kubelet()
			var got int32
			if k.Config.MaxPods != nil {
				got = *k.Config.MaxPods
			}
			if got != tc.maxPods || k.Source != tc.source || k.NodeConfig != tc.nodeConfig || k.Set != (tc.maxPods != 0) {
				t.Errorf("max pods %d from %q (set %v, NodeConfig %v), want %d from %q", got, k.Source, k.Set, k.NodeConfig, tc.maxPods, tc.source)
			}
			if p := u.Problems(); len(p) > 0 {
				t.Errorf("problems: %q", p)
			}
		})
	}
}

// TestSplitRefuses: data cloud-init would not run is an error naming the subject and wrapping
// ErrNotUserData; a part that cannot be read is a problem, not an error.
func TestSplitRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "lt-1 version 3 is empty"},
		{"plain text", "hello\n", "lt-1 version 3 is nothing cloud-init or nodeadm runs"},
		{"corrupt gzip", "\x1f\x8bnot gzip", "lt-1 version 3: gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Split("lt-1 version 3", "ud", []byte(tc.data))
			if !errors.Is(err, ErrNotUserData) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q wrapping ErrNotUserData", err, tc.want)
			}
		})
	}
	u, err := Split("s", "ud", []byte("MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := u.Problems(); len(p) != 1 || !strings.Contains(p[0], "without a boundary") {
		t.Errorf("problems %q, want the missing boundary", p)
	}
}

// TestLineChecks: each command check matches its commands and not their look-alikes.
func TestLineChecks(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // code of the one check that matches, "" for none
	}{
		{"hostnamectl set-hostname foo", "NK631"},
		{"  - [hostnamectl, set-hostname, foo]", "NK631"},
		{"echo worker-1 > /etc/hostname", "NK631"},
		{"iptables -t nat -F", "NK632"},
		{"ip6tables-nft --flush", "NK632"},
		{"systemctl restart docker", "NK633"},
		{"systemctl restart containerd", ""},
		{"iptables -A INPUT -j ACCEPT", ""},
		{"echo hostname is set by EC2", ""},
	} {
		var got []string
		for _, c := range LineChecks {
			if c.Re.MatchString(tc.line) {
				got = append(got, c.Rule.Code)
			}
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%q: matched %v, want %q", tc.line, got, tc.want)
		}
	}
}

// TestEachLine: lines are numbered from 1, CRLF endings dropped, and a line longer than MaxLine
// is cut there.
func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	var got []string
	EachLine([]byte("a\r\nb\n"+long+"\nlast"), func(n int, line []byte) {
		got = append(got, string(rune('0'+n))+":"+string(line[:min(len(line), 3)])+":"+string(rune('0'+len(line)/MaxLine)))
	})
	want := "1:a:0 2:b:0 3:xxx:1 4:las:0"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestParseFlags: the last value of a flag wins, comments are skipped, and the runtime
// endpoints are listed.
func TestParseFlags(t *testing.T) {
	f := ParseFlags("ExecStart=/usr/bin/kubelet --max-pods=20 --container-runtime-endpoint unix:///run/containerd/containerd.sock --max-pods 30\n# --max-pods=99\n")
	if !f.Seen || f.Config.MaxPods == nil || *f.Config.MaxPods != 30 || len(f.RuntimeEndpoints) != 1 {
		t.Errorf("got %+v", f)
	}
	if f := ParseFlags("# --max-pods=99\nnothing here"); f.Seen {
		t.Errorf("a comment was read: %+v", f)
	}
}
