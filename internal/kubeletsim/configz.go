package kubeletsim

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
)

// Address is where the API server reaches this kubelet (the Node's InternalIP and
// daemonEndpoints.kubeletEndpoint.Port), for a server that answers it (controlplane's ServeNode).
func (k *Kubelet) Address() netip.AddrPort {
	ip, _ := netip.ParseAddr(k.cfg.InternalIP) // Config.complete checked it
	return netip.AddrPortFrom(ip, uint16(k.cfg.KubeletPort))
}

// KubeletConfiguration is what this kubelet's /configz reports: the defaults of the kubelet
// (KubeletConfiguration v1beta1) as an EKS AMI leaves them, with this kubelet's max pods, lease
// duration, status frequencies and image pull limits. The fields are the ones nodekeeper's checks read and the
// ones the simulation honours; a real /configz carries many more.
func (k *Kubelet) KubeletConfiguration() map[string]any {
	c := k.cfg
	return map[string]any{
		"kind":                      "KubeletConfiguration",
		"apiVersion":                "kubelet.config.k8s.io/v1beta1",
		"maxPods":                   c.MaxPods,
		"podsPerCore":               0,
		"kubeAPIQPS":                50,
		"kubeAPIBurst":              100,
		"registryPullQPS":           c.RegistryPullQPS,
		"registryBurst":             c.RegistryBurst,
		"serializeImagePulls":       true,
		"nodeLeaseDurationSeconds":  c.LeaseDurationSeconds,
		"nodeStatusUpdateFrequency": c.NodeStatusUpdateFrequency.String(),
		"nodeStatusReportFrequency": c.NodeStatusReportFrequency.String(),
		"port":                      c.KubeletPort,
	}
}

// KubeletAPI is the part of the kubelet's HTTPS API the simulation serves: GET /configz, wrapped
// as the kubelet wraps it ({"kubeletconfig": ...}). Everything else is 404, as on a kubelet whose
// debugging handlers are off.
func (k *Kubelet) KubeletAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /configz", func(w http.ResponseWriter, _ *http.Request) {
		b, err := json.Marshal(map[string]any{"kubeletconfig": k.KubeletConfiguration()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
	return mux
}
