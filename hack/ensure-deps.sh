#!/usr/bin/env bash
# Installs what the build, the demo and the tests need from Debian's packages
# when it is missing: the PostgreSQL server binaries (the embedded default and
# the integration tests start a private server from them), psql, and
# chromium (the browser test of kubectl record ui).
set -euo pipefail

have_pg_server() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }

missing=()
have_pg_server || missing+=(postgresql)
command -v psql >/dev/null || missing+=(postgresql-client)
# The timeline page's browser test drives Debian's chromium (headless).
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v go >/dev/null || { echo "ensure-deps: Go is not installed (need Go >= 1.26)" >&2; exit 1; }

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "ensure-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's package starts a cluster of its own; the project does not use it.
$SUDO systemctl disable --now postgresql >/dev/null 2>&1 || true
have_pg_server || { echo "ensure-deps: PostgreSQL server binaries still missing" >&2; exit 1; }
