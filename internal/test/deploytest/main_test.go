package deploytest

import (
	"flag"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the copies of deploy/prometheus and deploy/grafana that the Helm chart and the kustomize component carry, and the binaries' recorded sizes (testdata/binary-sizes.txt)")

// env is one real control plane (etcd + kube-apiserver) shared by the tests that apply manifests.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}
