package bundle

import (
	"slices"
	"testing"
)

// TestMemberKinds: the table of what is read is complete and unambiguous: every report section
// is fed by some member, each kind is read one way, and no member path matches two kinds (visit
// takes the first, so a second would be dead).
func TestMemberKinds(t *testing.T) {
	for _, s := range Sections {
		if !slices.ContainsFunc(memberKinds, func(k memberKind) bool { return slices.Contains(k.feeds, s.Name) }) {
			t.Errorf("section %s is fed by no member kind", s.Name)
		}
	}
	paths := []string{pKubeletLog, pKubeletService, pIOThrottling, pInstanceID, pProcStat, pCloudInitOut, pUserData,
		pIPAMDEnv, pCNIVarsCtrd, pCNIVarsDocker, pCNILogDir + "ipamd.log", pCNILogDir + "plugin.log",
		"kubelet/config.json", "kubelet/kubelet-config.json", "kubelet/config.json.d/00-nodeadm.conf",
		"containerd/containerd-version.txt", "containerd/containerd-config.txt", pCloudInitLog}
	paths = append(paths, nodeadmLogs...)
	for _, k := range memberKinds {
		if (k.stream == nil) == (k.whole == nil) {
			t.Errorf("%s: exactly one of stream and whole must be set", k.what)
		}
	}
	for _, p := range paths {
		n := 0
		for _, k := range memberKinds {
			if k.match(p) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s matches %d member kinds, want 1", p, n)
		}
	}
}
