#!/usr/bin/env bash
# build.sh — build the Alertmanager the notification tests post alerts to,
# from its Go module (pinned in this directory's go.mod), once per version.
#
# The binary goes to
#   ${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/options-record}/alertmanager/<version>/alertmanager
# built into a temporary sibling first and renamed into place, so a killed
# build never leaves a half-filled cache; concurrent runs serialize on a lock.
# Needs only Go and the Go module proxy. The LAST LINE OF STDOUT is the
# binary's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(awk '$1 == "github.com/prometheus/alertmanager" {print $2; exit} $2 == "github.com/prometheus/alertmanager" {print $3; exit}' "${here}/go.mod")"
cache_root="${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/options-record}"
parent="${cache_root}/alertmanager"
dir="${parent}/${version}"
bin="${dir}/alertmanager"

log() { echo "ambuild: $*" >&2; }

if [[ -x "${bin}" ]]; then
	echo "${bin}"
	exit 0
fi
if [[ -n "${AMBUILD_FIND_ONLY:-}" ]]; then
	log "no build in ${dir}"
	exit 3
fi
mkdir -p "${parent}"
if command -v flock >/dev/null 2>&1; then
	exec 9>"${parent}/.lock"
	flock 9
	if [[ -x "${bin}" ]]; then
		echo "${bin}"
		exit 0
	fi
fi
tmp="$(mktemp -d "${parent}/.build-${version}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export GOWORK=off CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
log "building Alertmanager ${version} (a minute or two, once)"
# The module's zip lacks the web UI's built assets (ui/app/dist, made by npm
# in Alertmanager's release), which ui/web.go embeds: build from a copy of
# the module with a placeholder page there (replace in a temporary modfile),
# so the binary serves its API (all the tests use) from Go modules alone.
moddir="$(cd "${here}" && go list -m -f '{{.Dir}}' github.com/prometheus/alertmanager)"
src="${tmp}/src"
cp -R "${moddir}" "${src}"
chmod -R u+w "${src}"
for ui in elm mantine; do
	mkdir -p "${src}/ui/app/dist/${ui}"
	echo '<!doctype html><title>Alertmanager (API only: built without the UI)</title>' >"${src}/ui/app/dist/${ui}/index.html"
done
cp "${here}/go.mod" "${tmp}/go.mod"
cp "${here}/go.sum" "${tmp}/go.sum"
echo "replace github.com/prometheus/alertmanager => ${src}" >>"${tmp}/go.mod"
(cd "${here}" && go build -modfile "${tmp}/go.mod" -trimpath -o "${tmp}/alertmanager" github.com/prometheus/alertmanager/cmd/alertmanager)
rm -rf "${src}" "${tmp}/go.mod" "${tmp}/go.sum"
rm -rf "${dir}"
mv "${tmp}" "${dir}"
trap - EXIT
echo "${bin}"
