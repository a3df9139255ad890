#!/usr/bin/env bash
# build.sh — build the control-plane binaries the e2e tests run (etcd,
# kube-apiserver, kube-controller-manager) and the kubectl of the same release
# (for the CLI tests) from Go modules, once per version.
#
# The binaries go to
#   ${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/options-record}/controlplane/k8s-<ver>_etcd-<ver>/
# and are built only when that directory is missing or incomplete: into a
# temporary sibling directory first, then renamed into place, so a killed
# build never leaves a half-filled cache. Concurrent runs serialize on a lock.
#
# Needs only Go, the Go module proxy and bash/coreutils (flock is used when
# present). A cold build takes a few minutes on 2 cores and ~2 GB of memory;
# a warm run is instant.
#
# Progress goes to stderr; the LAST LINE OF STDOUT is the binaries directory,
# so callers can do:  dir="$(test/cpbuild/build.sh | tail -n1)"
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"

cache_root="${OPTIONS_RECORD_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/options-record}"
parent="${cache_root}/controlplane"
dir="${parent}/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}"
bins=(etcd kube-apiserver kube-controller-manager kubectl)

log() { echo "cpbuild: $*" >&2; }

complete() {
	local b
	for b in "${bins[@]}"; do
		[[ -x "${dir}/${b}" ]] || return 1
	done
	[[ -f "${dir}/VERSIONS" ]]
}

if complete; then
	log "up to date: ${dir}"
	echo "${dir}"
	exit 0
fi
# CPBUILD_FIND_ONLY=1: only say where complete binaries are (the tests use
# this when run outside make); exit 3 when there are none, building nothing.
if [[ -n "${CPBUILD_FIND_ONLY:-}" ]]; then
	log "no complete build in ${dir}"
	exit 3
fi

mkdir -p "${parent}"
if command -v flock >/dev/null 2>&1; then
	exec 9>"${parent}/.lock"
	flock 9
	if complete; then # another run finished it while we waited
		log "up to date: ${dir}"
		echo "${dir}"
		exit 0
	fi
fi

command -v go >/dev/null 2>&1 || {
	log "go is not on PATH"
	exit 1
}

tmp="$(mktemp -d "${parent}/.build-k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

# GOWORK=off: never let a go.work around the checkout change what we build.
# -mod=mod: tolerate a go.sum that lacks an entry (the committed one is complete).
# Keep -buildvcs=false: the modules live inside the project's repo.
export GOWORK=off CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"

k8s_minor="${K8S_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION}"
	ldflags+=" -X ${pkg}.gitMajor=1"
	ldflags+=" -X ${pkg}.gitMinor=${k8s_minor}"
	ldflags+=" -X ${pkg}.gitTreeState=clean"
	ldflags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

# Only what is missing is built: a cache made before a binary joined the list
# keeps the others (they are copied into the new directory).
k8s_pkgs=()
for b in "${bins[@]}"; do
	if [[ -x "${dir}/${b}" ]]; then
		cp -p "${dir}/${b}" "${tmp}/${b}"
	elif [[ "${b}" != etcd ]]; then
		k8s_pkgs+=("k8s.io/kubernetes/cmd/${b}")
	fi
done

if ((${#k8s_pkgs[@]})); then
	start=${SECONDS}
	log "building ${k8s_pkgs[*]} ${K8S_VERSION} into ${tmp} (this takes minutes)"
	(cd "${here}" && go build -trimpath -ldflags "${ldflags# }" -o "${tmp}/" "${k8s_pkgs[@]}") >&2
	log "kubernetes built in $((SECONDS - start))s"
fi

if [[ ! -x "${tmp}/etcd" ]]; then
	start=${SECONDS}
	log "building etcd ${ETCD_VERSION}"
	(cd "${here}/etcd" && go build -trimpath -o "${tmp}/etcd" go.etcd.io/etcd/server/v3) >&2
	log "etcd built in $((SECONDS - start))s"
fi

"${tmp}/kube-apiserver" --version >&2
"${tmp}/etcd" --version >&2
"${tmp}/kubectl" version --client >&2
{
	echo "K8S_VERSION=${K8S_VERSION}"
	echo "ETCD_VERSION=${ETCD_VERSION}"
	echo "GO_VERSION=$(go env GOVERSION)"
} >"${tmp}/VERSIONS"

chmod 0755 "${tmp}"
rm -rf "${dir}" # an incomplete leftover; complete ones returned above
mv -T "${tmp}" "${dir}"
trap - EXIT
log "done: ${dir}"
echo "${dir}"
