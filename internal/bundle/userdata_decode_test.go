package bundle

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// wrap76 breaks base64 into 76-character lines, as MIME writers do.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	return b.String() + s
}

// TestUserDataEncodings: user data that cloud-init would run is read however it is stored:
// gzip-compressed (cloud-init decompresses it), still base64 (what describe-instance-attribute
// --attribute userData returns), base64 of gzip of MIME (Terraform's cloudinit_config with gzip
// and base64_encode), and MIME parts of type application/x-gzip. Each once gave 0 findings and
// no NK635.
func TestUserDataEncodings(t *testing.T) {
	const all = "NK631:warning NK632:error NK633:warning"
	script := []byte(seedUserDataScript)
	mimeDoc := mimeUserData([2]string{"text/x-shellscript", seedUserDataScript})
	gzipPart := func(ct string) string {
		return "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"MIMEBOUNDARY\"\n\n" +
			"--MIMEBOUNDARY\nContent-Transfer-Encoding: base64\nContent-Type: " + ct + "\nMime-Version: 1.0\n\n" +
			wrap76(b64(gzipped.Bytes(t, []byte("#!/bin/bash\nhostnamectl set-hostname app-node-01\n")))) + "\n--MIMEBOUNDARY--\n"
	}
	for _, tc := range []struct{ name, data, want string }{
		{"gzip script", string(gzipped.Bytes(t, script)), all},
		{"base64 script", b64(script), all},
		{"base64 script in 76-column lines", wrap76(b64(script)) + "\n", all},
		{"base64 of gzip of MIME (cloudinit_config)", b64(gzipped.Bytes(t, []byte(mimeDoc))), all},
		{"gzip MIME", string(gzipped.Bytes(t, []byte(mimeDoc))), all},
		{"application/x-gzip part", gzipPart("application/x-gzip"), "NK631:warning"},
		{"application/octet-stream part holding gzip", gzipPart("application/octet-stream"), "NK631:warning"},
		{"cloud-config runcmd list", "#cloud-config\nruncmd:\n  - [ hostnamectl, set-hostname, app-node-01 ]\n  - [\"hostnamectl\", \"--static\", \"set-hostname\", \"app-node-01\"]\n", "NK631:warning"},
		{"cloud-config runcmd string", "#cloud-config\nruncmd:\n  - hostnamectl set-hostname app-node-01\n", "NK631:warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := analyzeFiles(t, untracedBundle(), Options{UserData: []byte(tc.data), UserDataName: "ud"})
			if got := codesOf(rep, "NK63"); got != tc.want {
				t.Errorf("bootstrap findings %q, want %q", got, tc.want)
			}
		})
	}
	// The count of the list form: both lines.
	rep := analyzeFiles(t, untracedBundle(), Options{UserData: []byte("#cloud-config\nruncmd:\n  - [ hostnamectl, set-hostname, a ]\n  - [\"hostnamectl\", \"--static\", \"set-hostname\", \"b\"]\n")})
	if f := findCode(t, rep, "NK631"); !strings.HasPrefix(f.Message, "2 ") {
		t.Errorf("NK631: %s", f.Message)
	}
}

// TestUserDataUnreadableParts: what cannot be decoded is NK635, and there are few of them
// whatever the input: every MIME part counts against the part cap, read or not (960 KB of bad
// parts gave 12,000 NK635 warnings), and the problems listed are capped too.
func TestUserDataUnreadableParts(t *testing.T) {
	bomb := gzipped.Bytes(t, make([]byte, maxUserDataInflated+1))
	badParts := func(n int, part string) string {
		var b strings.Builder
		b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n")
		for range n {
			b.WriteString("--b\n" + part)
		}
		b.WriteString("--b--\n")
		return b.String()
	}
	badB64 := "Content-Type: text/x-shellscript\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!\n"
	manyDocs := "apiVersion: node.eks.aws/v1alpha1\n" + strings.Repeat("---\nkind: NodeConfig\nspec: [unclosed\n", 500)
	for _, tc := range []struct {
		name     string
		data     string
		want     []string
		problems int
	}{
		{"960 KB of bad parts", badParts(10500, badB64), []string{"base64", "more than 64 parts", "more problems not listed"}, maxUserDataProblems + 2},
		{"a corrupt gzip part", badParts(1, "Content-Type: application/x-gzip\n\nnot gzip at all\n"), []string{"gzip"}, 1},
		{"a gzip bomb part", badParts(1, "Content-Type: application/x-gzip\nContent-Transfer-Encoding: base64\n\n"+wrap76(b64(bomb))+"\n"), []string{fmt.Sprintf("inflates past %d bytes", maxUserDataInflated)}, 1},
		{"a gzip part of nothing cloud-init runs", badParts(1, "Content-Type: application/x-gzip\nContent-Transfer-Encoding: base64\n\n"+b64(gzipped.Bytes(t, []byte("just text\n")))+"\n"), []string{"cloud-init does not run it"}, 1},
		{"500 bad NodeConfig documents", manyDocs, []string{"NodeConfig (document", "more problems not listed"}, maxUserDataProblems + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.data) > MaxUserDataSize {
				t.Fatalf("test input of %d bytes is above --user-data's cap", len(tc.data))
			}
			rep := analyzeFiles(t, seedFiles(), Options{UserData: []byte(tc.data), UserDataName: "ud"})
			var msgs []string
			for _, f := range rep.Findings() {
				if f.Code == "NK635" {
					msgs = append(msgs, f.Message)
				}
			}
			if len(msgs) != tc.problems {
				t.Errorf("%d NK635 findings, want %d: %q", len(msgs), tc.problems, msgs)
			}
			all := strings.Join(msgs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("NK635 lacks %q: %s", w, all)
				}
			}
		})
	}
}

// TestUserDataNotRecognised: --user-data that holds nothing cloud-init or nodeadm would run is an
// error saying what was looked for, as for a bundle with nothing to check.
func TestUserDataNotRecognised(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "\n\n", "is empty"},
		{"prose", "these are my notes about the node\n", "looked for a first line of #!"},
		{"a bootstrap line without #!", "/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=20'\n", "nothing cloud-init or nodeadm runs"},
		{"base64 of prose", b64([]byte("these are my notes\n")), "(decoded from base64) is nothing"},
		{"corrupt gzip", "\x1f\x8b\x08\x00garbage", "gzip"},
		{"gzip of prose", string(gzipped.Bytes(t, []byte("notes\n"))), "(decompressed) is nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := analyzeBytes(t, tarGz(t, collectorLayout(seedFiles())), Options{UserData: []byte(tc.data), UserDataName: "ud"})
			if err == nil || !errors.Is(err, ErrUserDataNotRecognised) || !errors.Is(err, ErrNotRecognised) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
