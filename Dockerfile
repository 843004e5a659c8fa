# Multi-stage build of the manager image: a static binary on distroless,
# running as the non-root user 65532. (No container engine exists on the
# machines this project is developed on; the image is built by CI elsewhere
# or with `make docker-build` where Docker is available.)
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go features.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY policy/ policy/
COPY webhooks/ webhooks/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager .

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
