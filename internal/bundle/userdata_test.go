package bundle

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// The seed's self-managed node: bootstrap.sh with the default max pods under custom networking,
// a hard-coded hostname, an iptables flush and Docker on a containerd node, without `set -x`.
const seedUserDataScript = `#!/bin/bash
hostnamectl set-hostname app-node-01
iptables -F
systemctl restart docker
/etc/eks/bootstrap.sh prod-cluster --use-max-pods false --kubelet-extra-args '--max-pods=110 --node-labels=team=shop'
`

// An AL2023 NodeConfig as nodeadm reads it (node.eks.aws/v1alpha1, spec.kubelet.config).
const seedNodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: prod-cluster
    apiServerEndpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com
    certificateAuthority: Y2E=
    cidr: 172.20.0.0/16
  kubelet:
    config:
      maxPods: 110
      registryPullQPS: 5
    flags:
      - --node-labels=team=shop
`

func mimeUserData(parts ...[2]string) string {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n")
	for _, p := range parts {
		b.WriteString("--//\nContent-Type: " + p[0] + "\n")
		b.WriteString("\n" + p[1] + "\n")
	}
	b.WriteString("--//--\n")
	return b.String()
}

// untracedBundle is the seed's node whose cloud-init-output.log shows no commands.
func untracedBundle() map[string]string {
	files := seedFiles()
	files["var_log/cloud-init-output.log"] = "Cloud-init v. 19.3-46.amzn2 running 'modules:final'\nUsing containerd as the container runtime\nCloud-init v. 19.3-46.amzn2 finished\n"
	return files
}

func codesOf(rep *findings.Report, prefix string) string {
	var out []string
	for _, c := range findingstest.ReportCodes(rep) {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return strings.Join(out, " ")
}

func TestUntracedUserData(t *testing.T) {
	rep := analyzeFiles(t, untracedBundle(), Options{})
	if got := codesOf(rep, "NK63"); got != "NK634:skipped" {
		t.Fatalf("bootstrap findings %q, want only NK634 saying the commands were not seen", got)
	}
	f := findCode(t, rep, "NK634")
	if !strings.Contains(f.Message, "set -x") || !strings.Contains(f.Message, "--user-data") {
		t.Errorf("NK634: %s", f.Message)
	}
}

func TestUserDataFile(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(seedUserDataScript))
	for _, tc := range []struct {
		name     string
		data     string
		wantBoot string // NK63x codes
		maxPods  string // in NK101's evidence
	}{
		{"shell script", seedUserDataScript, "NK631:warning NK632:error NK633:warning", "max pods 110 from seed.sh"},
		{"MIME multi-part", mimeUserData([2]string{"text/x-shellscript; charset=\"us-ascii\"", seedUserDataScript}), "NK631:warning NK632:error NK633:warning", "part 1 (text/x-shellscript)"},
		{"MIME with a base64 part", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==B==\"\n\n--==B==\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: base64\n\n" + b64 + "\n--==B==--\n", "NK631:warning NK632:error NK633:warning", "max pods 110"},
		{"NodeConfig", seedNodeConfig, "", "max pods 110 from seed.sh spec.kubelet.config"},
		{"NodeConfig inside MIME", mimeUserData([2]string{"application/node.eks.aws", seedNodeConfig}, [2]string{"text/x-shellscript", "#!/bin/bash\necho hello > /etc/hostname\n"}), "NK631:warning", "spec.kubelet.config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// With the bundle: the untraced log no longer hides the commands.
			rep := analyzeFiles(t, untracedBundle(), Options{UserData: []byte(tc.data), UserDataName: "seed.sh"})
			if got := codesOf(rep, "NK63"); got != tc.wantBoot {
				t.Errorf("bootstrap findings %q, want %q", got, tc.wantBoot)
			}
			// With a journal only: the user data's max pods is the configuration checked.
			jr, err := analyzeBytes(t, []byte(seedJournal()), Options{UserData: []byte(tc.data), UserDataName: "seed.sh", InstanceType: "m5.large"})
			if err != nil {
				t.Fatal(err)
			}
			ev := ""
			for _, f := range jr.Findings() {
				if f.Code == "NK102" || f.Code == "NK101" {
					ev = strings.Join(f.Evidence, " | ")
				}
			}
			if !strings.Contains(ev, tc.maxPods) {
				t.Errorf("capacity evidence %q lacks %q (codes %v)", ev, tc.maxPods, findingstest.ReportCodes(jr))
			}
		})
	}
}

func TestUserDataUnreadable(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"MIME without boundary", "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nx\n", "without a boundary"},
		{"bad base64", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!\n--b--\n", "base64"},
		{"bad NodeConfig", "kind: NodeConfig\nspec: [unclosed\n", "NodeConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := analyzeFiles(t, seedFiles(), Options{UserData: []byte(tc.data), UserDataName: "ud"})
			f := findCode(t, rep, "NK635")
			if !strings.Contains(f.Message, tc.want) {
				t.Errorf("NK635: %s", f.Message)
			}
		})
	}
}

// withFiles is files with more added.
func withFiles(files, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// TestMaxPodsFixFitsTheNode: NK101 names the fix for the node's OS and provisioner as the input
// shows them (rules.MaxPodsFix), as doctor does for each node, besides the rule's list.
func TestMaxPodsFixFitsTheNode(t *testing.T) {
	karpenter := strings.Replace(seedUserDataScript, "--node-labels=team=shop", "--node-labels=karpenter.sh/nodepool=default", 1)
	for _, tc := range []struct {
		name     string
		files    map[string]string
		userData string
		want     []string
	}{
		{"AL2 bootstrap.sh (the seed)", seedFiles(), "", []string{"Amazon Linux 2: in the user data run /etc/eks/bootstrap.sh", "--max-pods=20"}},
		// eks-log-collector.sh writes nodeadm's journals on every systemd host (get_nodeadm_info),
		// AL2's included, where they hold "-- No entries --": the files alone do not make it AL2023.
		{"AL2 with nodeadm's empty journals", withFiles(seedFiles(), map[string]string{
			"nodeadm/nodeadm-config.log": "-- No entries --\n", "nodeadm/nodeadm-run.log": "-- No entries --\n"}), "",
			[]string{"Amazon Linux 2: in the user data run /etc/eks/bootstrap.sh", "--max-pods=20"}},
		{"AL2023 NodeConfig", untracedBundle(), seedNodeConfig, []string{"Amazon Linux 2023", "spec.kubelet.config.maxPods: 20", "ignores custom networking"}},
		{"Karpenter node", untracedBundle(), karpenter, []string{"Karpenter", "reservedENIs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{}
			if tc.userData != "" {
				o.UserData = []byte(tc.userData)
			}
			rep := analyzeFiles(t, tc.files, o)
			f := findCode(t, rep, "NK101")
			ev := strings.Join(f.Evidence, " | ")
			for _, w := range append(tc.want, "fix for this node") {
				if !strings.Contains(ev, w) {
					t.Errorf("NK101 evidence lacks %q: %s", w, ev)
				}
			}
		})
	}
}
