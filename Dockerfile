# syntax=docker/dockerfile:1
# ringcap's images, for users with Docker (or any BuildKit/OCI builder):
#
#   docker build --target plugin   -t ringcap/plugin:$TAG   .   # device plugin, static, FROM scratch
#   docker build --target operator -t ringcap/operator:$TAG .   # operator, static, FROM scratch
#   docker build --target ringcap  -t ringcap/ringcap:$TAG  .   # data plane: ringcap + rdma-core
#
# The data-plane image carries rdma-core's userspace libraries and every provider (mlx5, rxe,
# efa, ...), so the same image drives a ConnectX NIC or Soft-RoCE. Build with
# --build-arg VERSION=$TAG to stamp the binaries.
#
# Machines without Docker (ringcap's CI) build the same contents with hack/images/build.sh
# (go-containerregistry; binaries from the working tree, libraries from the host's Debian
# bookworm packages) and import the resulting tarballs into containerd.

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libibverbs-dev librdmacm-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ENV GOFLAGS=-buildvcs=false
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/plugin ./cmd/operator \
 && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ringcap ./cmd/ringcap

# --- device plugin: runs as root only to own its socket in the kubelet's directory (see the chart)
FROM scratch AS plugin
COPY --from=build /out/plugin /plugin
ENTRYPOINT ["/plugin"]

# --- operator: unprivileged
FROM scratch AS operator
COPY --from=build /out/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]

# --- data plane: ringcap recv/send/ring and the verbs userspace (last stage = default target)
FROM debian:${DEBIAN_RELEASE}-slim AS ringcap
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
      libibverbs1 librdmacm1 ibverbs-providers ibverbs-utils rdma-core \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd -g 65532 ringcap && useradd -u 65532 -g 65532 -d /tmp -s /bin/sh ringcap
COPY --from=build /out/ringcap /usr/bin/ringcap
ENTRYPOINT ["/usr/bin/ringcap"]
