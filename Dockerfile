# The operator image: a static binary on distroless, running as non-root.
#   make docker-build IMG=gomomento/valkey-operator:v0.1.0
FROM golang:1.26 AS builder
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Modules first, so source edits reuse the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X github.com/gomomento/valkey-operator/internal/version.Version=${VERSION}" \
      -o /out/valkey-operator ./cmd/valkey-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/valkey-operator /valkey-operator
USER 65532:65532
ENTRYPOINT ["/valkey-operator"]
