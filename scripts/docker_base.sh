#!/usr/bin/env bash
# Build a local stand-in for the official python:3.11-slim image, for machines that reach Debian's
# package mirror but no image registry: a minimal Debian (the host's release, from the host's
# apt mirror) with python3 and venv, made by debootstrap and imported as ${BASE_IMAGE}.
# Needs root, debootstrap and a running Docker engine. Does nothing if the image exists
# (FORCE=1 rebuilds it). Used by scripts/compose_smoke.sh; see docs/deploy.md.
set -euo pipefail
BASE_IMAGE=${BASE_IMAGE:-fairmetric-base:local}
DOCKER=${DOCKER:-docker}
if [[ "${FORCE:-0}" != 1 ]] && $DOCKER image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  echo "base image $BASE_IMAGE exists"
  exit 0
fi
# shellcheck disable=SC1091
. /etc/os-release
SUITE=${SUITE:-$VERSION_CODENAME}
mirror_from_apt() { # the first "deb" URI of the host's apt configuration for the main archive
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1 || true)
  [[ -n "$uri" ]] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | head -n1 || true)
  echo "${uri:-http://deb.debian.org/debian}"
}
MIRROR=${MIRROR:-$(mirror_from_apt)}
ROOTFS=$(mktemp -d /var/tmp/fairmetric-base.XXXXXX)
cleanup() { # unmount what debootstrap may have left mounted, then remove on this file system only
  local mount
  for mount in $(awk -v root="$ROOTFS" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$mount" || true
  done
  rm -rf --one-file-system "$ROOTFS" "$ROOTFS.log"
}
trap cleanup EXIT
echo "debootstrap $SUITE from $MIRROR into $ROOTFS"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  "$SUITE" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || { tail -n 30 "$ROOTFS.log"; exit 1; }
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin
tar -C "$ROOTFS" -c . | $DOCKER import \
  --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["python3"]' - "$BASE_IMAGE" >/dev/null
echo "imported $BASE_IMAGE ($($DOCKER run --rm "$BASE_IMAGE" python3 --version))"
