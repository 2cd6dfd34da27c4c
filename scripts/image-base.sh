#!/usr/bin/env bash
# Builds, from Debian packages and the repository's pinned Node 24, a local equivalent of the official
# node:24-bookworm-slim image, for machines that reach no container registry (CI reaches only the npm
# and Debian ones). The Containerfile is then built with --build-arg BASE=<this image>.
#
# What the official image is (github.com/nodejs/docker-node, 24/bookworm-slim/Dockerfile), and how
# each part is made here:
#   debian:bookworm-slim         mmdebstrap --variant=minbase bookworm, from the machine's own apt
#                                sources, without docs, man pages and locales (as Debian's slim does)
#   /usr/local/bin/node          the 'node' devDependency's binary (node_modules/node/bin/node), the
#                                same official linux-x64 build at the version package-lock pins
#   npm, npx                     the npm package from the npm registry (npm pack npm@$NPM_VERSION)
#   user node (1000:1000)        groupadd/useradd, as upstream
#   docker-entrypoint.sh, CMD    the same script: runs "node ARGS" unless the first argument is a command
# Left out: yarn and corepack (the Containerfile uses neither). One layer, imported with podman.
#
# Usage: scripts/image-base.sh [--force]   (prints the image name; reuses it when it already exists)
# Needs: mmdebstrap (apt-get install -y mmdebstrap), podman, root (mmdebstrap's root mode).
set -euo pipefail
source "$(dirname "$0")/image-env.sh"

NPM_VERSION="${NPM_VERSION:-11}"
if [[ "${1:-}" != "--force" ]] && podman_ image exists "$BASE_IMAGE"; then
  echo "$BASE_IMAGE"
  exit 0
fi

work=$(mktemp -d "$STORE_DIR/tmp/base.XXXXXX")
trap 'rm -rf "$work"' EXIT

# npm, as the official image bundles it. Cached: the tarball is the same for a given version.
npm_tgz=$(ls "$STORE_DIR"/cache/npm-"$NPM_VERSION"*.tgz 2>/dev/null | head -1 || true)
if [[ -z "$npm_tgz" ]]; then
  (cd "$STORE_DIR/cache" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  npm_tgz=$(ls "$STORE_DIR"/cache/npm-"$NPM_VERSION"*.tgz | head -1)
fi

cat > "$work/docker-entrypoint.sh" <<'SH'
#!/bin/sh
set -e
# Run command with node if the first argument contains a "-" or is not a system command.
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
SH
chmod 755 "$work/docker-entrypoint.sh"

export TG_NODE_BIN="$NODE_BIN" TG_NPM_TGZ="$npm_tgz" TG_ENTRYPOINT="$work/docker-entrypoint.sh"
echo "image-base: mmdebstrap bookworm (minbase) + node $NODE_VERSION + $(basename "$npm_tgz" .tgz)" >&2
mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='install -m 755 "$TG_NODE_BIN" "$1/usr/local/bin/node"' \
  --customize-hook='mkdir -p "$1/usr/local/lib/node_modules/npm" && tar -xzf "$TG_NPM_TGZ" -C "$1/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner' \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook='install -m 755 "$TG_ENTRYPOINT" "$1/usr/local/bin/docker-entrypoint.sh"' \
  --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
  --customize-hook='chroot "$1" node --version >/dev/null && chroot "$1" npm --version >/dev/null' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log "$1"/tmp/*' \
  bookworm "$work/rootfs.tar"

podman_ import --quiet \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  --message "node:24-bookworm-slim equivalent, built by scripts/image-base.sh" \
  "$work/rootfs.tar" "$BASE_IMAGE" >/dev/null
echo "$BASE_IMAGE"
