#!/usr/bin/env bash
# Build the kubectl-record plugin's archives and the krew manifest that
# names them, with their sha256 (make plugin):
#
#   out/kubectl-record_<os>_<arch>.tar.gz   kubectl-record, kubectl_complete-record
#                                           (kubectl's completion hook), README.md and
#                                           LICENSE (Apache-2.0)
#   out/record.yaml                         the krew manifest
#
# Install one on this machine with krew:
#   kubectl krew install --manifest=out/record.yaml --archive=out/kubectl-record_linux_amd64.tar.gz
# or put the binary on your PATH (kubectl finds kubectl-* plugins there).
#
# PLATFORMS (default: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64),
# VERSION (a semver tag, default v0.1.0), OUT (default _output/plugin) and
# LDFLAGS (more linker flags: the Makefile's -X stamps of the version,
# commit and build date, api/version) can be set. Archives are reproducible, byte for byte, on any builder:
# one Go toolchain (GO_TOOLCHAIN, default below: go fetches it when the
# local go is another version), no paths or VCS stamp in the binary
# (-trimpath -buildvcs=false), no environment GOFLAGS, and fixed file
# modes, times, owners, order and gzip header, whatever the umask
# (test/shipcheck TestPluginArchivesAreReproducible builds under 022 and
# 077 and compares).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/_output/plugin}
version=${VERSION:-v0.1.0}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
export GOTOOLCHAIN=${GO_TOOLCHAIN:-go1.26.8}
# Nothing of the builder's environment reaches the build.
export GOFLAGS=-mod=readonly CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 GOEXPERIMENT=
repo=https://github.com/options-record/options-record
case $version in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "build.sh: VERSION=$version is not a semver tag (vX.Y.Z)" >&2; exit 2 ;; esac
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platform_entries=""
for p in $platforms; do
	os=${p%/*} arch=${p#*/}
	name=kubectl-record_${os}_${arch}
	mkdir -p "$work/$name"
	(cd "$root" && GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -ldflags="-s -w -buildid= ${LDFLAGS:-}" \
		-o "$work/$name/kubectl-record" ./cmd/kubectl-record)
	cp "$root/cmd/kubectl-record/README.md" "$work/$name/README.md"
	cp "$root/LICENSE" "$work/$name/LICENSE"
	cp "$root/cmd/kubectl-record/kubectl_complete-record" "$work/$name/kubectl_complete-record"
	# Modes as released, not as the umask or the checkout left them.
	chmod 0755 "$work/$name/kubectl-record" "$work/$name/kubectl_complete-record"
	chmod 0644 "$work/$name/README.md" "$work/$name/LICENSE"
	tar --format=gnu --sort=name --mtime='2026-01-01 00:00:00Z' --owner=0 --group=0 --numeric-owner \
		-C "$work/$name" -cf - kubectl-record kubectl_complete-record README.md LICENSE | gzip -n -9 >"$out/$name.tar.gz"
	sum=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)
	echo "build.sh: $out/$name.tar.gz $sum"
	platform_entries+="
    - selector:
        matchLabels:
          os: $os
          arch: $arch
      uri: $repo/releases/download/$version/$name.tar.gz
      sha256: $sum
      bin: kubectl-record
      files:
        - from: kubectl-record
          to: .
        - from: kubectl_complete-record
          to: .
        - from: README.md
          to: .
        - from: LICENSE
          to: ."
done

cat >"$out/record.yaml" <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: record
spec:
  version: $version
  homepage: $repo
  shortDescription: Who changed or deleted an object; put it back
  description: |
    kubectl record asks the cluster's Options Record (an audit webhook
    backend that keeps every change's prior state and who made it) who
    deleted or changed an object, lists its versions, prints a clean
    manifest of any of them, and restores one as you, after a server-side
    dry run. Your RBAC decides what you see and what you may write back.
  caveats: |
    The cluster needs Options Record with its aggregated API
    (record.optionsrecord.io); without it every command says so.
    Reading needs the options-record-reader role, restoring the
    options-record-restorer role and the rights to write the object.
  platforms:$platform_entries
YAML
echo "build.sh: $out/record.yaml"
