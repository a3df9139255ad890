#!/usr/bin/env bash
# build.sh — build the C2SP tlog-witness the tamper log's witness tests
# submit checkpoints to: litewitness from filippo.io/torchwood (pinned in
# this directory's go.mod), and witnessconfig, which adds a log and its key
# to litewitness's database as witnessctl would. Once per version.
#
# The binaries go to
#   ${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/options-record}/litewitness/<version>/
# built into a temporary sibling first and renamed into place, so a killed
# build never leaves a half-filled cache; concurrent runs serialize on a lock.
# Needs only Go and the Go module proxy. The LAST LINE OF STDOUT is the
# directory holding litewitness and witnessconfig.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(awk '$1 == "filippo.io/torchwood" {print $2; exit}' "${here}/go.mod")"
cache_root="${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/options-record}"
parent="${cache_root}/litewitness"
dir="${parent}/${version}"

log() { echo "wbuild: $*" >&2; }

if [[ -x "${dir}/litewitness" && -x "${dir}/witnessconfig" ]]; then
	echo "${dir}"
	exit 0
fi
mkdir -p "${parent}"
if command -v flock >/dev/null 2>&1; then
	exec 9>"${parent}/.lock"
	flock 9
	if [[ -x "${dir}/litewitness" && -x "${dir}/witnessconfig" ]]; then
		echo "${dir}"
		exit 0
	fi
fi
tmp="$(mktemp -d "${parent}/.build-${version}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export GOWORK=off CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
log "building litewitness ${version} (a minute, once)"
(cd "${here}" && go build -trimpath -o "${tmp}/" filippo.io/torchwood/cmd/litewitness ./witnessconfig)
rm -rf "${dir}"
mv "${tmp}" "${dir}"
trap - EXIT
echo "${dir}"
