# nodekeeper — build, test and benchmark entry points. `make test` is what CI runs (.ci/run).
SHELL := /usr/bin/env bash
GO ?= go
# One place for the version: the binary (internal/buildinfo), the release archives, the krew
# manifest, the image tag and the Helm chart (its version and appVersion are VERSION without the v).
# Each is computed once per make run (not at every use), so every artefact of a run agrees.
VERSION ?= $(eval VERSION := $$(shell bash hack/version.sh))$(VERSION)
CHART_VERSION = $(patsubst v%,%,$(VERSION))
COMMIT ?= $(eval COMMIT := $$(shell git rev-parse HEAD 2>/dev/null || echo unknown))$(COMMIT)
BUILD_DATE ?= $(eval BUILD_DATE := $$(shell date -u +%Y-%m-%dT%H:%M:%SZ))$(BUILD_DATE)
BUILDINFO := github.com/nodekeeper/nodekeeper/internal/buildinfo
LDFLAGS := -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(BUILD_DATE)
# A fallback kubectl is built with the control plane; one already on PATH wins.
export PATH := $(PATH):$(CURDIR)/bin/controlplane

.PHONY: all build controlplane helm promtool deps test test-short lint cross-vet fuzz vulncheck bench run sandbox clean \
	release-tools release-snapshot release-check chart-package

all: build

## build: bin/nodekeeper (the CLI), the kubectl plugin bin/kubectl-nodekeeper, and
## bin/nodekeeper-controller (the controller alone: what the image runs)
build:
	@echo "building bin/nodekeeper and bin/nodekeeper-controller (go build; a cold build cache takes minutes)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/nodekeeper ./cmd/nodekeeper
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/nodekeeper-controller ./cmd/nodekeeper-controller
	ln -sf nodekeeper bin/kubectl-nodekeeper
	$(GO) run ./hack/checkstatic bin/nodekeeper bin/nodekeeper-controller

## controlplane: etcd, kube-apiserver, kube-controller-manager (and kubectl) built from Go modules
controlplane:
	bash hack/build-controlplane.sh

## helm: Helm built from its Go module, for the chart tests
helm:
	bash hack/build-helm.sh

## promtool: promtool built from the Prometheus module, for the alert rules' unit tests
promtool:
	bash hack/build-promtool.sh

## deps: machine packages the tests use (Debian packages), and moto_server (a pinned moto[server]) for the AWS tests
deps:
	bash hack/install-deps.sh

## lint: gofmt and go vet over every package, and a type-check of the other platforms.
## go vet takes build's CGO_ENABLED=0 and -trimpath, so it reuses the packages `make build` just
## compiled instead of compiling the whole dependency graph again (on a cold cache: 124 s, not 452 s).
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath ./...
	$(MAKE) cross-vet

## cross-vet: type-check the other platforms cheaply (no link). darwin/arm64 gets go vet over every
## package; windows/amd64 compiles the product's packages without their tests (benchmarks and the
## control-plane helpers read Unix process facts such as rusage). internal/test/kubeletstub drives
## Linux network namespaces for the control-plane tests of doctor, explain and the controller's
## check loop, and is not linked into a binary, so it and those packages' tests are left out of the
## vet run (KUBELETSTUB_USERS); their own code is compiled instead.
KUBELETSTUB_USERS = ./internal/doctor ./internal/explain ./internal/controller/checks
CROSS_VET_PKGS = $(shell $(GO) list ./cmd/... ./internal/... | grep -v -e '/internal/test/kubeletstub$$' -e '/internal/doctor$$' -e '/internal/explain$$' -e '/internal/controller/checks$$')
CROSS_BUILD_PKGS = $(shell $(GO) list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./cmd/... ./internal/... | grep -v -e '/internal/test/kubeletstub$$')
cross-vet:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet $(CROSS_VET_PKGS)
	for p in $(KUBELETSTUB_USERS); do CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null $$p || exit 1; done
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build $(CROSS_BUILD_PKGS)

## test: everything CI runs — install, build, lint, then all unit and integration tests
test: deps controlplane helm promtool build lint
	bash hack/test.sh

## fuzz: every Fuzz* target of every package, FUZZTIME each (default 1m; discovered with go test -list)
fuzz:
	FUZZTIME=$${FUZZTIME:-1m} bash hack/fuzz.sh

## vulncheck: govulncheck, pinned, over the module's packages. Needs the network (the Go
## vulnerability database): run it on a networked machine and record the run in docs/security.md.
GOVULNCHECK_VERSION ?= v1.1.4
vulncheck:
	$(GO) run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) ./...

## bench: the benchmarks named in the issues, printed as figures and ratios
bench: controlplane build
	bash hack/bench.sh

## run: the main job — against the current cluster if one answers, else the built-in sandbox.
## Only the sandbox needs the control plane, so hack/run.sh builds it on that path alone.
run: build
	bash hack/run.sh

## sandbox: a local control plane with simulated kubelets (Ctrl-C stops it)
sandbox: controlplane build
	bin/nodekeeper sandbox

## release-tools: GoReleaser and cyclonedx-gomod, built from tools/release/go.mod into bin/
release-tools:
	bash hack/build-release-tools.sh

## release-snapshot: the whole release in dist/ without publishing: six archives (linux, darwin,
## windows × amd64, arm64), checksums, SBOMs, the krew manifest and the packaged Helm chart, all
## stamped with VERSION. The container image is defined in .goreleaser.yaml but needs a Docker
## engine, so it is skipped here. Cold, the six cross-builds take about ten minutes on two cores.
release-snapshot: release-tools helm
	VERSION=$(VERSION) COMMIT=$(COMMIT) BUILD_DATE=$(BUILD_DATE) PATH="$(CURDIR)/bin:$$PATH" \
		CONTROLPLANE_LDFLAGS="$$(bash hack/controlplane-ldflags.sh)" \
		bin/goreleaser release --snapshot --clean --skip=publish,announce,validate,docker,sign
	$(GO) -C tools/release run ./krewmanifest -template ../../deploy/krew/nodekeeper.yaml -dist ../../dist -version $(VERSION)
	$(MAKE) --no-print-directory chart-package VERSION=$(VERSION)

## release-check: release-snapshot, then tools/release/releasecheck over dist/ (archives against
## their checksums, the host archive's binary running `version -o json`, SBOMs, krew hashes).
## Not part of `make test`: the cross-builds are too slow for it.
release-check: release-snapshot
	RELEASE_DIST="$(CURDIR)/dist" VERSION=$(VERSION) COMMIT=$(COMMIT) \
		$(GO) -C tools/release test -count=1 -v ./...

## chart-package: dist/nodekeeper-<version>.tgz, the chart stamped with VERSION (helm lint first)
chart-package: helm
	bin/helm lint --strict deploy/helm/nodekeeper
	bin/helm package deploy/helm/nodekeeper --version $(CHART_VERSION) --app-version $(CHART_VERSION) --destination dist

clean:
	rm -rf bin dist
