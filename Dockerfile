# syntax=docker/dockerfile:1
# The nodekeeper controller image: one static Go binary, nodekeeper-controller (the controller alone,
# without the CLI's other commands, readers, printers and AWS SDK), on distroless/static (no shell, no package manager,
# no libc), running as the numeric nonroot user 65532 so that the kubelet can verify
# runAsNonRoot. Build from the repository root:
#
#   docker build -t <registry>/nodekeeper:<tag> --build-arg VERSION=<tag> \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ... --build-arg VERSION=<tag> --push .
#
# internal/test/deploytest checks this file's structure (Go version, stages, user, entrypoint).
# Releases build the image from GoReleaser's binaries instead: see Dockerfile.release.

# Base images are pinned by digest (the multi-platform index), the tag they were taken from
# beside them; internal/test/deploytest refuses an unpinned FROM. To move a pin, replace the digest
# with the one the tag points at now.
# golang:1.26.8
ARG GO_IMAGE=golang:1.26.8@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79
# gcr.io/distroless/static:nonroot
ARG RUNTIME_IMAGE=gcr.io/distroless/static:nonroot@sha256:e2e927ec666bae08560abb3c55d0659eceabb657f56b6782ab500a9fc7f555e3

# The builder runs on the build machine's platform and cross-compiles, which is much faster than
# emulating the target platform.
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
WORKDIR /src
# Modules first: a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY internal/ internal/
# CGO off: distroless/static has no C library.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/go/build-cache \
    GOCACHE=/go/build-cache CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X github.com/nodekeeper/nodekeeper/internal/buildinfo.version=${VERSION} -X github.com/nodekeeper/nodekeeper/internal/buildinfo.commit=${COMMIT} -X github.com/nodekeeper/nodekeeper/internal/buildinfo.date=${BUILD_DATE}" -o /out/nodekeeper-controller ./cmd/nodekeeper-controller

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="nodekeeper" \
      org.opencontainers.image.description="Safe garbage collection of leaked node leases and zombie kubelet detection" \
      org.opencontainers.image.source="https://github.com/nodekeeper/nodekeeper"
COPY --from=build /out/nodekeeper-controller /nodekeeper-controller
USER 65532:65532
ENTRYPOINT ["/nodekeeper-controller"]
