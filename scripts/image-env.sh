# Sourced by the scripts/image-*.sh scripts: one private container store for buildah and podman.
#
# Everything lives under .tools/containers/ (git-ignored), never in /var/lib/containers: CI machines and
# developers' own images stay untouched, and two checkouts never share state. The vfs driver is the one
# that works on these machines (no overlay mounts inside the VM); it copies whole layers, so the
# Containerfile keeps its layers few.
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STORE_DIR="${TOLLGATE_IMAGE_STORE:-$ROOT_DIR/.tools/containers}"
mkdir -p "$STORE_DIR/storage" "$STORE_DIR/run" "$STORE_DIR/tmp" "$STORE_DIR/cache"

STORE_FLAGS=(--root "$STORE_DIR/storage" --runroot "$STORE_DIR/run" --storage-driver vfs)

# crun (Debian's OCI runtime for podman and buildah) refuses to start any container on a "hybrid" cgroup
# host whose cgroup v2 hierarchy holds controllers ("cgroups in hybrid mode not supported"), which is
# how these machines are set up. So each command runs in a private mount namespace where that v2 mount
# is detached: crun then sees plain cgroup v1, which it supports. The host's mounts are not touched.
in_cgroup_v1_view() {
  if [[ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]]; then
    unshare --mount --propagation private -- sh -c 'umount -l /sys/fs/cgroup/unified && exec "$@"' sh "$@"
  else
    "$@"
  fi
}
buildah_() { in_cgroup_v1_view buildah "${STORE_FLAGS[@]}" "$@"; }
podman_() { in_cgroup_v1_view podman "${STORE_FLAGS[@]}" --tmpdir "$STORE_DIR/tmp" --events-backend file --cgroup-manager cgroupfs "$@"; }

# The base image the Containerfile is built FROM, built locally by scripts/image-base.sh.
NODE_BIN="$ROOT_DIR/node_modules/node/bin/node"
if [[ ! -x "$NODE_BIN" ]]; then
  echo "image: $NODE_BIN is missing; run 'npm ci' first (Node 24 is the pinned 'node' devDependency)" >&2
  exit 1
fi
NODE_VERSION=$("$NODE_BIN" --version)
NODE_VERSION=${NODE_VERSION#v}
BASE_IMAGE="localhost/tollgate-base/node:${NODE_VERSION}-bookworm-slim"
IMAGE="${TOLLGATE_IMAGE:-localhost/tollgate:test}"
