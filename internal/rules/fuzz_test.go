package rules

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// FuzzParseKubeletConfig: whatever a kubelet's /configz or a KubeletConfiguration file in a bundle
// holds, the parsers return a configuration or an error (never a panic), the checks run on what
// they return, and the text report of the findings stays terminal-safe.
func FuzzParseKubeletConfig(f *testing.F) {
	for _, seed := range []string{
		`{"kubeletconfig":{"registryPullQPS":5,"registryBurst":10,"serializeImagePulls":true,"maxPods":110,"kubeAPIQPS":50,"kubeAPIBurst":100}}`,
		`{"kubeletconfig":{"registryPullQPS":0,"maxPods":737,"podsPerCore":0,"maxParallelImagePulls":-1}}`,
		`{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","maxPods":29,"serializeImagePulls":false}`,
		`{"kubeletconfig":null}`,
		`{"kubeletconfig":{"maxPods":2147483648}}`,
		`[1,2,3]`,
		"{\"kubeletconfig\":{\"maxPods\":\"\x1b]0;x\x07\"}}",
		``,
	} {
		f.Add([]byte(seed), uint16(58))
	}
	f.Fuzz(func(t *testing.T, data []byte, pods uint16) {
		var configs []KubeletConfig
		if c, err := ParseConfigz(data); err == nil {
			configs = append(configs, c)
		} else if err.Error() == "" {
			t.Fatal("empty error")
		}
		if c, err := ParseKubeletConfigFile(data); err == nil {
			configs = append(configs, c)
		}
		for _, c := range configs {
			merged := KubeletConfig{}.Merge(c)
			if merged.EffectiveMaxPods() != c.EffectiveMaxPods() {
				t.Fatalf("merging onto an empty configuration changed maxPods: %d vs %d", merged.EffectiveMaxPods(), c.EffectiveMaxPods())
			}
			fs := CheckKubeletConfig("node/fuzz", "configz", c, int(pods))
			fs = append(fs, CheckMaxPodsAgreement("node/fuzz", c, int(pods))...)
			assertPrintable(t, fs)
		}
	})
}

// FuzzCheckCNISettings: the aws-node checks accept any environment (NAME=value lines) and the
// text report of what they find stays terminal-safe.
func FuzzCheckCNISettings(f *testing.F) {
	for _, seed := range []string{
		"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true\nENABLE_PREFIX_DELEGATION=true\nWARM_PREFIX_TARGET=1",
		"WARM_ENI_TARGET=0\nWARM_IP_TARGET=0\nMINIMUM_IP_TARGET=0\nMAX_ENI=1",
		"ENABLE_POD_ENI=maybe\x1b[2J\nCLUSTER_ENDPOINT= \nWARM_IP_TARGET=\xff",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env := map[string]string{}
		for _, entry := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == 0 }) {
			name, value, _ := strings.Cut(entry, "=")
			env[name] = value
		}
		assertPrintable(t, CheckCNISettings(CNIInput{Resource: "daemonset/kube-system/aws-node", Env: env}))
	})
}

func assertPrintable(t *testing.T, fs []findings.Finding) {
	t.Helper()
	r := findings.NewReport("doctor", "fuzz", time.Unix(0, 0).UTC(), findings.SectionSpec{Name: SectionKubelet, Title: "Kubelet"})
	for i := range fs {
		if fs[i].Code == "" {
			t.Fatalf("finding without a code: %+v", fs[i])
		}
		fs[i].Section = SectionKubelet // one section is enough to print them all
	}
	r.Add(fs...)
	var out bytes.Buffer
	if err := findings.PrintText(&out, r, findings.PrintOptions{MaxPerRule: -1, Catalog: findings.MustCatalog(Rules)}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if !textsafe.Safe(line) {
			t.Fatalf("raw terminal text in the report: %q", line)
		}
	}
}
