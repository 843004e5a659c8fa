# The manager image for those with a container engine (make docker-build).
# `make image` builds the same image without one (hack/image): the same
# files (hack/image/rootfs and the binary, on an empty base), the same go
# build flags, user, entrypoint and labels; test/images checks that this
# file and the Go builder agree.
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION
ARG REVISION
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/manager/ cmd/manager/
COPY controllers/ controllers/
COPY internal/ internal/
COPY policy/ policy/
COPY version/ version/
COPY webhooks/ webhooks/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w -X github.com/sidecarset-operator/sidecarset-operator/version.version=${VERSION} -X github.com/sidecarset-operator/sidecarset-operator/version.revision=${REVISION}" -buildvcs=false -o manager ./cmd/manager

# A static binary needs no base: only etc/passwd and etc/group naming the
# non-root user 65532 (distroless' nonroot). The manager talks to nothing but
# the API server, whose CA comes with the service account token.
FROM scratch
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.title=sidecarset-operator
LABEL org.opencontainers.image.description="The SidecarSet operator's manager: the pod injection webhook, the SidecarSet webhooks and the in-place upgrade controller."
LABEL org.opencontainers.image.version=${VERSION}
LABEL org.opencontainers.image.revision=${REVISION}
LABEL org.opencontainers.image.source=https://github.com/sidecarset-operator/sidecarset-operator
LABEL org.opencontainers.image.licenses=Apache-2.0
COPY hack/image/rootfs/ /
COPY --from=builder /workspace/manager /manager
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/manager"]
