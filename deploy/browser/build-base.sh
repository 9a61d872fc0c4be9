#!/usr/bin/env bash
# Builds the computer-use browser base image locally, without any image
# registry: a minimal Debian root filesystem with Debian's Chromium, socat
# and a font, made with debootstrap from the machine's Debian mirror, brought
# up to date from the security suite, and loaded with `docker import`.
#
# The image is tagged by a hash of its inputs (this script, the suite, the
# mirrors and the package list), so a machine that already holds it reuses
# it and a changed input builds a new one. The tag is printed on stdout.
#
#   deploy/browser/build-base.sh            # prints e.g. visor-browser-base:3f2a…
#
# Environment: VISOR_BROWSER_MIRROR (default: the first Debian URI in the
# apt sources, else http://deb.debian.org/debian), VISOR_BROWSER_SECURITY
# (default: the mirror's host with /debian-security), VISOR_BROWSER_SUITE
# (default bookworm).
set -euo pipefail

suite=${VISOR_BROWSER_SUITE:-bookworm}
packages=chromium,socat,fonts-dejavu-core,ca-certificates
mirror=${VISOR_BROWSER_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
mirror=${mirror%/}
security=${VISOR_BROWSER_SECURITY:-${mirror%/debian}/debian-security}

hash=$( { cat "$0"; printf '%s\n' "$suite" "$mirror" "$security" "$packages"; } | sha256sum | cut -c1-16)
tag=visor-browser-base:$hash

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

command -v debootstrap >/dev/null || { echo "build-base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

# Builds that run at the same time (parallel tests) take turns; the second
# one finds the image the first made.
exec 9>"/tmp/visor-browser-base.lock"
flock 9
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

root=$(mktemp -d /tmp/visor-browser-rootfs.XXXXXX)
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT
echo "build-base: debootstrap $suite from $mirror into $root" >&2
debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2

# The browser comes from apt inside the new root, with the security suite,
# so it is installed at its patched version (and apt orders the many
# dependencies, which debootstrap's --include cannot).
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
SOURCES
mount -t proc proc "$root/proc"
chroot "$root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade &&
  DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends $(echo "$packages" | tr , ' ')" >&2
umount "$root/proc"

# A smaller image: no package caches, documentation or locales.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
  "$root"/var/log/* "$root"/tmp/*
# The unprivileged user the browser runs as (uid/gid 1000).
chroot "$root" sh -c 'groupadd -g 1000 browser && useradd -u 1000 -g 1000 -m -d /home/browser -s /bin/sh browser'

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/sh"]' \
  - "$tag" >&2
echo "$tag"
