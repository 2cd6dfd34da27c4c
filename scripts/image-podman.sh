#!/usr/bin/env bash
# podman on the private store of scripts/image-env.sh (vfs, cgroup v1 view): `scripts/image-podman.sh ps -a`.
set -euo pipefail
source "$(dirname "$0")/image-env.sh"
podman_ "$@"
