#!/usr/bin/env bash
# Runs before `npm test` (npm's pretest). The suites start their own redis-server and Prometheus on free
# ports with temporary directories; on a fresh Debian machine those are packages not installed yet, so
# they are installed here (apt-get, as root or through sudo) instead of asking the newcomer to; so is
# Debian's chromium, which the account area's browser tests drive with playwright-core. Nothing is
# started here. kubectl and helm come from an npm devDependency and need nothing.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
{ command -v prometheus >/dev/null && command -v promtool >/dev/null; } || missing+=(prometheus)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "npm test: the suites need Debian packages that are not installed: ${missing[*]}; installing them with apt-get" >&2
if ! command -v apt-get >/dev/null; then
  echo "npm test: no apt-get here; install ${missing[*]} with this system's package manager, then run npm test again" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "npm test: installing ${missing[*]} needs root or sudo" >&2; exit 1; }
  SUDO=sudo
fi
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
