package explain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/bundle"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
)

// writeBundle writes an unpacked EKS logs-collector bundle (eks-log-collector.sh's layout) of
// instance id on host: /proc/stat's boot time, the root volume's IO delays above NK621's
// threshold, a kubelet journal naming the host, and the CNI plugin's first "connection refused"
// from ipamd 30 s after the boot (the story of seed 002), so that NK622 fires.
func writeBundle(t *testing.T, id, host string, boot time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "eks_"+id)
	refused := boot.Add(30 * time.Second)
	files := map[string]string{
		"system/instance-id.txt":            id + "\n",
		"system/procstat.txt":               "cpu  100 0 100 1000 0 0 0 0 0 0\ncpu0 100 0 100 1000 0 0 0 0 0 0\nbtime " + strconv.FormatInt(boot.Unix(), 10) + "\nprocesses 5301\n",
		"system/io_throttling.txt":          "PID Name Block IO Delay (centisconds)\n3121 (kubelet) 4521\n2890 (containerd) 3012\n",
		"kubelet/kubelet.log":               boot.Add(40*time.Second).UTC().Format("Jan 02 15:04:05") + " " + host + ` kubelet[3121]: I0304 09:11:41.000 3121 kubelet_node_status.go:73] "Attempting to register node"` + "\n",
		"var_log/aws-routed-eni/plugin.log": `{"level":"error","ts":"` + refused.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `","caller":"routed-eni-cni-plugin/cni.go:283","msg":"Error received from AddNetwork gRPC call for container 5f3c: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing dial tcp 127.0.0.1:50051: connect: connection refused\""}` + "\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBundleStory: the node's own bundle adds its boot and ipamd's first connection refused
// (NK622's two moments, each with its file:line) to the same timeline, and NK622 to the
// findings; a bundle of another node is refused, naming both nodes.
func TestBundleStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "ip-10-79-0-3.us-west-2.compute.internal"
	s := startStuckNode(ctx, t, name)
	boot := s.base.Add(-20 * time.Minute).Truncate(time.Second)
	opts := Options{Target: name, Now: func() time.Time { return s.base }, Doctor: doctor.Options{AWSNodeName: s.ds.Name}}

	t.Run("this node's", func(t *testing.T) {
		o := opts
		o.Bundles = []string{writeBundle(t, "i-0fedcba9876543210", "ip-10-79-0-3", boot)}
		st, err := Tell(ctx, depsFor(t, env.AdminConfig()), o)
		if err != nil {
			t.Fatal(err)
		}
		var bootAt, refusedAt int = -1, -1
		for i, l := range st.Timeline {
			switch {
			case l.Source == SourceBundle && strings.Contains(l.Where, "system/procstat.txt:3") && l.Time.Equal(boot):
				bootAt = i
			case l.Source == SourceBundle && strings.Contains(l.Where, "plugin.log:1") && strings.Contains(l.What, "ipamd's first connection refused, 30 s after boot"):
				refusedAt = i
			}
		}
		if bootAt < 0 || refusedAt < bootAt {
			t.Errorf("boot at line %d, first refusal at line %d of the timeline", bootAt, refusedAt)
		}
		found := false
		for _, f := range st.Findings {
			found = found || f.Code == bundle.RuleBootIODelay.Code
		}
		if !found {
			t.Errorf("no %s among the findings", bundle.RuleBootIODelay.Code)
		}
		if t.Failed() {
			logStory(t, st)
		}
	})
	t.Run("another node's", func(t *testing.T) {
		o := opts
		o.Bundles = []string{writeBundle(t, "i-0aaaaaaaaaaaaaaaa", "ip-10-99-9-9", boot)}
		_, err := Tell(ctx, depsFor(t, env.AdminConfig()), o)
		if !errors.Is(err, ErrBundle) {
			t.Fatalf("another node's bundle: %v, want ErrBundle", err)
		}
		for _, want := range []string{"i-0aaaaaaaaaaaaaaaa", "ip-10-99-9-9", name, "i-0fedcba9876543210"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal does not name %s: %v", want, err)
			}
		}
	})
}
