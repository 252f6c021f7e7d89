// Package deploytest tests nodekeeper's deployment artefacts in deploy/ and the Dockerfile: the
// Helm chart (linted and rendered by a Helm built from its Go module, see hack/build-helm.sh), the
// kustomize base and its components (rendered by kubectl kustomize), the Prometheus alerts
// and the Grafana dashboard (every PromQL expression parsed by the Prometheus parser and held to
// the metrics contract of docs/metrics.md), and the Dockerfile's structure.
//
// The rendered manifests are applied to a real kube-apiserver (internal/test/testenv) with strict field
// validation, their pods are checked against the "restricted" Pod Security Standard by the API
// server's own admission, and the RBAC they grant is probed with SubjectAccessReviews and with
// real requests under the controller's service account.
//
// The package has no non-test code. Run it with
//
//	go test ./internal/test/deploytest/
//
// and after editing deploy/prometheus/nodekeeper.rules.yaml or deploy/grafana/nodekeeper.json with
//
//	go test ./internal/test/deploytest/ -run TestCopiesInSync -update
//
// to refresh the copies the Helm chart and the kustomize component carry.
package deploytest
