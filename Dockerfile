# Options Record: `options-record serve` in a distroless image.
#
#   make image                      # docker build -t options-record:dev .
#
# The build stage runs the same command as `make build` (CGO_ENABLED=0
# go build -trimpath ./cmd/options-record; test/shipcheck checks that they
# agree): a static binary, no cgo, no local paths in it, so the same source
# and toolchain give the same bytes. Base images are pinned by version and
# digest; renew both together (`docker buildx imagetools inspect IMAGE:TAG`).

# Go 1.26.8 (the toolchain the project builds and tests with), Debian bookworm.
FROM golang:1.26.8-bookworm@sha256:dc9ad6c05acc7a88e5b71bde60a5fe3bd4b9f0db209011711b464107438a8107 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Cross-builds (docker buildx --platform) compile natively for the target.
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# The version stamps (-X of api/version), from the Makefile's VERSION_LDFLAGS
# (`make image` passes them); without them the binary says v0.0.0-dev.
ARG VERSION_LDFLAGS=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "${VERSION_LDFLAGS}" -o /out/options-record ./cmd/options-record

# distroless "static", Debian 13, tag nonroot (uid/gid 65532): CA certificates,
# tzdata and /etc/passwd; no shell, no package manager. distroless tags carry
# no version, so the digest is the pin.
FROM gcr.io/distroless/static-debian13:nonroot@sha256:1c2c046bc09ed40fad370b599a0b1ae7987f55b01e247cf27a7c27cd97e5bbc7
COPY --from=build /out/options-record /options-record
# The licence (Apache-2.0) ships in every image and archive.
COPY LICENSE /LICENSE
USER 65532:65532
# 8443 audit webhook (HTTPS), 8444 restore API (HTTPS), 9090 metrics and probes (HTTP).
EXPOSE 8443 8444 9090
ENTRYPOINT ["/options-record"]
CMD ["serve"]
