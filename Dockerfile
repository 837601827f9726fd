# syntax=docker/dockerfile:1
#
# The operator's image for those who build with Docker or BuildKit:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) \
#     -t ghcr.io/valkey-fsm/valkey-operator:0.1.0 .
#
# It builds what `make image` builds without Docker (hack/image): the static binary, stamped
# with the same ldflags, alone at /valkey-operator, run as 65532:65532. The base differs:
# distroless/static adds /etc/passwd, CA certificates and tzdata, which the binary does not need
# (it carries its own roots and zone database, operator/emptybase.go). The images are therefore
# not byte-identical; `make image` is the one that is reproducible and tested.
#
# Not built in CI: CI's machine has no Docker daemon and no registry access to pull the bases.
# CI tests the image `make image` writes, which the local cluster runs (docs/development/local-cluster.md).

ARG GO_VERSION=1.26

# The compiler runs on the build machine's platform and cross-compiles: no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/valkey-fsm/valkey-operator/internal/version.Version=${VERSION} -X github.com/valkey-fsm/valkey-operator/internal/version.Commit=${COMMIT}" \
      -o /out/valkey-operator ./operator

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title=valkey-operator \
      org.opencontainers.image.source=https://github.com/valkey-fsm/valkey-operator \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT}
COPY --from=build /out/valkey-operator /valkey-operator
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/valkey-operator"]
