# nodekeeper — build, test and benchmark entry points. `make test` is what CI runs (.ci/run).
SHELL := /usr/bin/env bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# A fallback kubectl is built with the control plane; one already on PATH wins.
export PATH := $(PATH):$(CURDIR)/bin/controlplane

.PHONY: all build controlplane helm deps test test-short lint bench run sandbox clean

all: build

## build: bin/nodekeeper and the kubectl plugin bin/kubectl-nodekeeper
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/nodekeeper ./cmd/nodekeeper
	ln -sf nodekeeper bin/kubectl-nodekeeper

## controlplane: etcd, kube-apiserver, kube-controller-manager (and kubectl) built from Go modules
controlplane:
	bash hack/build-controlplane.sh

## helm: Helm built from its Go module, for the chart tests
helm:
	bash hack/build-helm.sh

## deps: machine packages the tests use (Debian packages only)
deps:
	bash hack/install-deps.sh

## lint: gofmt and go vet over every package
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## test: everything CI runs — install, build, lint, then all unit and integration tests
test: deps controlplane helm build lint
	bash hack/test.sh

## bench: the benchmarks named in the issues, printed as figures and ratios
bench: controlplane build
	bash hack/bench.sh

## run: the main job — against the current cluster if one answers, else the built-in sandbox
run: controlplane build
	bash hack/run.sh

## sandbox: a local control plane with simulated kubelets (Ctrl-C stops it)
sandbox: controlplane build
	bin/nodekeeper sandbox

clean:
	rm -rf bin
