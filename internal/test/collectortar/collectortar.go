// Package collectortar packs test log bundles as eks-log-collector.sh does (from inside the
// collection directory: "./" names, directories first, gzip-compressed), for the tests of
// `nodekeeper bundle` in internal/bundle and internal/test/e2e. Import it only from tests.
package collectortar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"path"
	"sort"
	"testing"
	"time"
)

// Member is one tar entry: a regular file (Typeflag 0 or tar.TypeReg) holding Body, a
// directory, or any other type with its Link.
type Member struct {
	Name     string
	Body     string
	Typeflag byte
	Link     string
}

// TarGz builds the gzip-compressed tar of ms in memory, every entry modified at mtime.
func TarGz(t testing.TB, mtime time.Time, ms []Member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		h := &tar.Header{Name: m.Name, Mode: 0o644, ModTime: mtime, Typeflag: m.Typeflag, Linkname: m.Link}
		switch m.Typeflag {
		case 0, tar.TypeReg:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(m.Body))
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(m.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Layout lays files (slash-separated paths relative to the collection directory, and their
// contents) out as the collector's tar does: "./", then every directory, then the files, each
// in name order.
func Layout(files map[string]string) []Member {
	dirs := map[string]bool{}
	var names []string
	for n := range files {
		names = append(names, n)
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sort.Strings(names)
	ms := []Member{{Name: "./", Typeflag: tar.TypeDir}}
	var dl []string
	for d := range dirs {
		dl = append(dl, d)
	}
	sort.Strings(dl)
	for _, d := range dl {
		ms = append(ms, Member{Name: "./" + d + "/", Typeflag: tar.TypeDir})
	}
	for _, n := range names {
		ms = append(ms, Member{Name: "./" + n, Body: files[n]})
	}
	return ms
}

// CleanNode is what the collector gathers from a healthy node: an m5.large whose kubelet
// registered, VPC CNI 1.20.1 with CLUSTER_ENDPOINT set. Nothing in it is a finding of `nodekeeper
// bundle`; tests add the one symptom they are about. A new map each call.
func CleanNode() map[string]string {
	return map[string]string{
		"system/instance-id.txt":                          "i-0fedcba9876543210\n",
		"system/procstat.txt":                             "cpu 1\ncpu0 1\ncpu1 1\n",
		"system/io_throttling.txt":                        "PID Name Block IO Delay (centisconds)\n3121 (kubelet) 20\n",
		"kubelet/kubelet.log":                             "Mar 04 09:11:41 ip-10-0-1-2 kubelet[1]: I0304 \"Successfully registered node\"\n",
		"kubelet/config.json":                             `{"maxPods":29,"registryPullQPS":0,"serializeImagePulls":false,"kubeAPIQPS":10}`,
		"var_log/aws-routed-eni/ipamd.log":                `{"msg":"Starting L-IPAMD v1.20.1  ..."}` + "\n" + `{"msg":"Found instance-type: m5.large "}` + "\n",
		"var_log/cloud-init-output.log":                   "+ /usr/bin/nodeadm init\n",
		"cni/cni-configuration-variables-containerd.json": `{"Image":"amazon-k8s-cni:v1.20.1-eksbuild.1","Spec":{"process":{"env":["CLUSTER_ENDPOINT=https://x.eks.amazonaws.com","WARM_ENI_TARGET=1"]}}}`,
	}
}
