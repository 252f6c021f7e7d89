package kube

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// TestKubectlConnectionFlagsAreKubectls: the CLI's connection flags are kubectl's own. The same
// flag set as cli-runtime's ConfigFlags (names, shorthands, types, defaults), and for every flag
// the same rest config and kubeconfig selection: ConfigFlags is the reference, the CLI no longer
// links it (its package brings cli-runtime's resource builder and kustomize).
func TestKubectlConnectionFlagsAreKubectls(t *testing.T) {
	t.Setenv("KUBECACHEDIR", "")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ""}
- name: c2
  cluster: {server: "https://127.0.0.2:6443", insecure-skip-tls-verify: true}
contexts:
- name: a
  context: {cluster: c1, user: u1, namespace: from-context}
- name: b
  context: {cluster: c2, user: u2}
current-context: a
users:
- name: u1
  user: {token: token-1}
- name: u2
  user: {username: basic, password: secret}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	ours, kubectl := pflag.NewFlagSet("ours", pflag.ContinueOnError), pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	NewKubectlConnectionFlags().AddFlags(ours)
	genericclioptions.NewConfigFlags(true).AddFlags(kubectl)
	if got, want := flagSet(ours), flagSet(kubectl); !reflect.DeepEqual(got, want) {
		t.Errorf("flags:\n%v\nkubectl's:\n%v", got, want)
	}

	base := []string{"--kubeconfig", kubeconfig}
	for _, args := range [][]string{
		nil,
		{"--context", "b"},
		{"--cluster", "c2"},
		{"--user", "u2"},
		{"-n", "other"},
		{"--namespace", "ns/x"},
		{"--server", "https://10.0.0.1:443", "--tls-server-name", "api.example", "--insecure-skip-tls-verify"},
		{"-s", "https://10.0.0.1:443", "--certificate-authority", filepath.Join(dir, "ca.crt")},
		{"--token", "t2"},
		{"--client-certificate", filepath.Join(dir, "c.crt"), "--client-key", filepath.Join(dir, "c.key")},
		{"--as", "jane", "--as-uid", "42", "--as-group", "g1", "--as-group", "g2", "--as-user-extra", "k=v1", "--as-user-extra", "k=v2", "--as-user-extra", "novalue"},
		{"--request-timeout", "7s"},
		{"--proxy-url", "http://127.0.0.1:3128"},
		{"--disable-compression"},
		{"--cache-dir", dir},
	} {
		args := append(append([]string{}, base...), args...)
		c := NewKubectlConnectionFlags()
		k := genericclioptions.NewConfigFlags(true)
		fs, kfs := pflag.NewFlagSet("ours", pflag.ContinueOnError), pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
		c.AddFlags(fs)
		k.AddFlags(kfs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := kfs.Parse(args); err != nil {
			t.Fatalf("%v (kubectl): %v", args, err)
		}
		got, gotErr := c.ToRESTConfig()
		want, wantErr := k.ToRESTConfig()
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%v: error %v, kubectl's %v", args, gotErr, wantErr)
		}
		if gotErr == nil && (got.Proxy == nil) != (want.Proxy == nil) {
			t.Errorf("%v: proxy %v, kubectl's %v", args, got.Proxy != nil, want.Proxy != nil)
		}
		if gotErr == nil && !reflect.DeepEqual(comparable(got), comparable(want)) {
			t.Errorf("%v: rest config\n%+v\nkubectl's\n%+v", args, comparable(got), comparable(want))
		}
		raw, err := c.RawConfig()
		kraw, kerr := k.ToRawKubeConfigLoader().RawConfig()
		if err != nil || kerr != nil || raw.CurrentContext != kraw.CurrentContext || len(raw.Contexts) != len(kraw.Contexts) {
			t.Errorf("%v: raw kubeconfig %q (%v), kubectl's %q (%v)", args, raw.CurrentContext, err, kraw.CurrentContext, kerr)
		}
		ns, _, err := c.ClientConfig().Namespace()
		kns, _, kerr := k.ToRawKubeConfigLoader().Namespace()
		if ns != kns || (err == nil) != (kerr == nil) {
			t.Errorf("%v: namespace %q, kubectl's %q", args, ns, kns)
		}
		if c.Namespace() != *k.Namespace || c.Context() != *k.Context || c.Cluster() != *k.ClusterName {
			t.Errorf("%v: -n %q --context %q --cluster %q, kubectl's %q %q %q", args, c.Namespace(), c.Context(), c.Cluster(), *k.Namespace, *k.Context, *k.ClusterName)
		}
	}
}

// TestKubectlConnectionFlagsWithoutKubeconfig: with no kubeconfig anywhere (and outside a
// cluster) the CLI does what kubectl does, talks to the default server, rather than failing on
// an empty configuration as the controller's flags do.
func TestKubectlConnectionFlagsWithoutKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	got, err := NewKubectlConnectionFlags().ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	want, err := genericclioptions.NewConfigFlags(true).ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != want.Host || got.Host == "" {
		t.Errorf("host %q, kubectl's %q", got.Host, want.Host)
	}
	if _, err := NewConnectionFlags().ToRESTConfig(); err == nil {
		t.Errorf("the controller's flags loaded a configuration from nothing")
	}
}

// flagSet lists a flag set's flags as "name -short type default".
func flagSet(fs *pflag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		out = append(out, "--"+f.Name+" -"+f.Shorthand+" "+f.Value.Type()+" "+f.DefValue)
	})
	sort.Strings(out)
	return out
}

// comparable is a rest config without its functions, which reflect.DeepEqual cannot compare
// (the proxy's presence is compared apart).
func comparable(c *rest.Config) rest.Config {
	out := *c
	out.Proxy, out.Dial, out.WrapTransport, out.ExecProvider, out.AuthConfigPersister = nil, nil, nil, nil, nil
	return out
}
