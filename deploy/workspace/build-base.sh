#!/usr/bin/env bash
# Builds the workspace base image locally, without any image registry: a
# minimal Debian root filesystem (shell, coreutils, Python 3, Git, CA certificates) made with
# debootstrap from the machine's Debian mirror and loaded with `docker import`.
#
# The image is tagged by a hash of its inputs (this script, the suite, the
# mirror and the package list), so a machine that already holds it reuses it
# and a changed input builds a new one. The tag is printed on stdout.
#
#   deploy/workspace/build-base.sh            # prints e.g. visor-workspace-base:3f2a…
#
# Environment: VISOR_WORKSPACE_MIRROR (default: the first Debian URI in the
# apt sources, else http://deb.debian.org/debian), VISOR_WORKSPACE_SUITE
# (default bookworm).
set -euo pipefail

suite=${VISOR_WORKSPACE_SUITE:-bookworm}
packages=python3,git,ca-certificates
mirror=${VISOR_WORKSPACE_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

hash=$( { cat "$0"; printf '%s\n' "$suite" "$mirror" "$packages"; } | sha256sum | cut -c1-16)
tag=visor-workspace-base:$hash

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

command -v debootstrap >/dev/null || { echo "build-base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

# Builds that run at the same time (parallel tests) take turns; the second
# one finds the image the first made.
exec 9>"/tmp/visor-workspace-base.lock"
flock 9
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

root=$(mktemp -d /tmp/visor-workspace-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "build-base: debootstrap $suite from $mirror into $root" >&2
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2

# A smaller image: no package caches, documentation or locales.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
  "$root"/var/log/* "$root"/tmp/*
# The unprivileged user scripts run as (uid/gid 1000), as the production image.
chroot "$root" sh -c 'groupadd -g 1000 worker && useradd -u 1000 -g 1000 -M -d /workspace -s /bin/sh worker'

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /workspace' \
  --change 'CMD ["/bin/sh"]' \
  - "$tag" >&2
echo "$tag"
