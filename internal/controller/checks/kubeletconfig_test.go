package checks

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
)

// TestKubeletConfigStraightFromTheKubelet: --checks-kubelet-config asks each Ready node's kubelet
// for /configz at its InternalIP and registered port, with the controller's bearer token and the
// kubelet's certificate verified against the configuration's CA (never the node proxy); a
// kubelet that refuses (an older kubelet authorizes /configz as nodes/proxy only) leaves that
// node's configuration unread with the permission named, and the configz fact is no longer
// missing once one is read. A kubelet on 127.0.0.1 (httptest's TLS server) stands for the node.
func TestKubeletConfigStraightFromTheKubelet(t *testing.T) {
	var paths, tokens []string
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths, tokens = append(paths, r.URL.Path), append(tokens, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer controller-token" {
			http.Error(w, "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource=configz)", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"kubeletconfig":{"maxPods":58,"registryPullQPS":10,"registryBurst":20}}`))
	}))
	defer kubelet.Close()
	_, portText, _ := net.SplitHostPort(kubelet.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kubelet.Certificate().Raw})

	node := func(name string, ready bool) corev1.Node {
		n := readyNode(name, "mng-a")
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
		if !ready {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return n
	}
	for _, tc := range []struct {
		name, token string
		wantErr     string // "" = read
	}{
		{"allowed", "controller-token", ""},
		{"refused", "other-token", "forbidden: needs get on nodes/configz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths, tokens = nil, nil
			r, err := newKubeletConfigReader(&rest.Config{Host: "https://api.example:443", BearerToken: tc.token,
				TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: "api.example"}}, KubeletConfigOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := &doctor.Facts{Nodes: []corev1.Node{node("ready-node", true), node("down-node", false)},
				Missing: map[doctor.Fact]doctor.Missing{doctor.FactConfigz: {Resource: "nodes/proxy", Reason: "needs get on nodes/proxy"}}}
			r.fill(context.Background(), f)
			if len(paths) != 1 || paths[0] != kubeletConfigzPath {
				t.Fatalf("kubelet asked for %v, want one /configz for the Ready node", paths)
			}
			got := f.Configz["ready-node"]
			if tc.wantErr == "" {
				if got.Config == nil || got.Config.MaxPods == nil || *got.Config.MaxPods != 58 {
					t.Fatalf("configz %+v, want maxPods 58", got)
				}
				if !f.Has(doctor.FactConfigz) {
					t.Error("configz still missing after it was read")
				}
			} else {
				if got.Config != nil || !strings.Contains(got.Err, tc.wantErr) {
					t.Fatalf("configz %+v, want the error %q", got, tc.wantErr)
				}
				if f.Has(doctor.FactConfigz) {
					t.Error("configz no longer missing though no kubelet answered")
				}
			}
			if e := f.Configz["down-node"].Err; e != "node not Ready" {
				t.Errorf("the node that is not Ready: %q, want it skipped", e)
			}
		})
	}
}
