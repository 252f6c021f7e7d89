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
# internal/deploytest checks this file's structure (Go version, stages, user, entrypoint).
# Releases build the image from GoReleaser's binaries instead: see Dockerfile.release.

ARG GO_VERSION=1.26

# The builder runs on the build machine's platform and cross-compiles, which is much faster than
# emulating the target platform.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
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

FROM gcr.io/distroless/static:nonroot
LABEL org.opencontainers.image.title="nodekeeper" \
      org.opencontainers.image.description="Safe garbage collection of leaked node leases and zombie kubelet detection" \
      org.opencontainers.image.source="https://github.com/nodekeeper/nodekeeper"
COPY --from=build /out/nodekeeper-controller /nodekeeper-controller
USER 65532:65532
ENTRYPOINT ["/nodekeeper-controller"]
