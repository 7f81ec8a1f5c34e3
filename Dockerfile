# syntax=docker/dockerfile:1
# ringcap's images, for users with Docker (or any BuildKit/OCI builder):
#
#   docker build --target plugin   -t ringcap/plugin:$TAG   .   # device plugin, static, FROM scratch
#   docker build --target operator -t ringcap/operator:$TAG .   # operator, static, FROM scratch
#   docker build --target ringcap  -t ringcap/ringcap:$TAG  .   # data plane: ringcap + rdma-core, and kubectl-ringcap
#
# The data-plane image carries rdma-core's userspace libraries and every provider (mlx5, rxe,
# efa, ...) and libfabric (its providers: verbs, efa, psm2, tcp, ...; fi_info), so the same image
# drives a ConnectX NIC, an EFA or Soft-RoCE. Build with --build-arg VERSION=$TAG to stamp the
# binaries (and the images' org.opencontainers.image.version label).
#
# The base images are build arguments (defaults: the public images). Without a registry,
# hack/images/podman/build.sh (`make images-podman`) makes local stand-ins from Debian packages and
# this host's Go and builds every target with podman; see docs/install.md.
#
# Machines without Docker (ringcap's CI) build the same contents with hack/images/build.sh
# (go-containerregistry; binaries from the working tree, libraries from the host's Debian
# bookworm packages) and import the resulting tarballs into containerd; `make images-podman-check`
# compares what the two produce.

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm
ARG BUILD_IMAGE=golang:${GO_VERSION}-${DEBIAN_RELEASE}
ARG RUNTIME_IMAGE=debian:${DEBIAN_RELEASE}-slim

FROM ${BUILD_IMAGE} AS build
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libibverbs-dev librdmacm-dev libfabric-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# explicit caches, so the cache mounts below hold them whatever the base image's GOPATH
ENV GOMODCACHE=/go/pkg/mod GOCACHE=/root/.cache/go-build GOFLAGS=-buildvcs=false
# a module mirror, e.g. --build-arg GOPROXY=file:///goproxy with the host's module cache mounted
# there (hack/images/podman/build.sh); unset: the base image's default (proxy.golang.org)
ARG GOPROXY
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/plugin ./cmd/operator ./cmd/kubectl-ringcap \
 && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ringcap ./cmd/ringcap

# --- device plugin: runs as root only to own its socket in the kubelet's directory (see the chart)
FROM scratch AS plugin
ARG VERSION=dev
LABEL org.opencontainers.image.source=https://github.com/ringcap/ringcap org.opencontainers.image.version=${VERSION}
COPY --from=build /out/plugin /plugin
ENTRYPOINT ["/plugin"]

# --- operator: unprivileged
FROM scratch AS operator
ARG VERSION=dev
LABEL org.opencontainers.image.source=https://github.com/ringcap/ringcap org.opencontainers.image.version=${VERSION}
COPY --from=build /out/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]

# --- data plane: ringcap recv/send/ring, the verbs userspace and libfabric with its providers, and the
# kubectl plugin kubectl-ringcap (static; copy it out of the image onto a PATH beside kubectl)
# (last stage = default target)
FROM ${RUNTIME_IMAGE} AS ringcap
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
      libibverbs1 librdmacm1 ibverbs-providers ibverbs-utils rdma-core libfabric1 libfabric-bin \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd -g 65532 ringcap && useradd -u 65532 -g 65532 -d /tmp -s /bin/sh ringcap
ARG VERSION=dev
LABEL org.opencontainers.image.source=https://github.com/ringcap/ringcap org.opencontainers.image.version=${VERSION}
COPY --from=build /out/ringcap /usr/bin/ringcap
COPY --from=build /out/kubectl-ringcap /usr/bin/kubectl-ringcap
ENTRYPOINT ["/usr/bin/ringcap"]
