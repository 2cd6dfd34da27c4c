#!/usr/bin/env bash
# Builds the Tollgate image from the Containerfile with buildah, FROM the local node:24-bookworm-slim
# equivalent (scripts/image-base.sh), into the private store of scripts/image-env.sh.
# Usage: scripts/image-build.sh   (prints the image name)
set -euo pipefail
source "$(dirname "$0")/image-env.sh"
cd "$ROOT_DIR"

base=$(bash scripts/image-base.sh)
version=$(node -p 'require("./package.json").version')
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# A machine behind a TLS-inspecting proxy trusts it through NODE_EXTRA_CA_CERTS (as these do); the build's
# npm needs the same bundle, handed over as a build secret (never part of the image).
secret=()
ca="${NODE_EXTRA_CA_CERTS:-}"
[[ -n "$ca" && -f "$ca" ]] && secret=(--secret "id=ca-certificates,src=$ca")
# No --layers: buildah then commits once per stage, which matters with vfs (every commit copies the tree).
# The build stage's `npm ci` reaches the npm registry through the host's network.
buildah_ build --quiet --network host --format oci \
  --build-arg BASE="$base" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  "${secret[@]}" --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  -f Containerfile -t "$IMAGE" . >&2
# The previous build of this tag is now untagged; with vfs each copy costs a few hundred MB.
podman_ image prune --force >/dev/null
echo "$IMAGE"
