#!/usr/bin/env bash
# Builds, without any image registry, the one local base image the stack's
# Postgres, Redis and Visor containers use where the public images cannot
# be pulled (tests, CI, air-gapped hosts): a minimal Debian root filesystem
# with postgresql-15 and redis-server, made with debootstrap from a Debian
# mirror and loaded with `docker import`.
#
# The tag hashes the inputs (this script, the suite, the mirror, the
# packages), so a machine that holds the image reuses it. The tag is the
# only thing printed on stdout.
#
#   deploy/local/build-base.sh     # prints e.g. visor-local-base:1a2b…
#
# Environment: VISOR_LOCAL_MIRROR (default: the first Debian URI in the apt
# sources, else http://deb.debian.org/debian), VISOR_LOCAL_SUITE (bookworm).
set -euo pipefail

suite=${VISOR_LOCAL_SUITE:-bookworm}
packages=postgresql-15,redis-server,ca-certificates
mirror=${VISOR_LOCAL_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

hash=$( { cat "$0"; printf '%s\n' "$suite" "$mirror" "$packages"; } | sha256sum | cut -c1-16)
tag=visor-local-base:$hash

have() { docker image inspect "$tag" >/dev/null 2>&1; }
if have; then echo "$tag"; exit 0; fi
command -v debootstrap >/dev/null || { echo "build-base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

# Concurrent builds take turns; the second finds the first one's image.
exec 9>/tmp/visor-local-base.lock
flock 9
if have; then echo "$tag"; exit 0; fi

root=$(mktemp -d /tmp/visor-local-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "build-base: debootstrap $suite ($packages) from $mirror" >&2
# Services are never started inside the chroot (policy-rc.d), and Debian's
# default cluster is not created: the entrypoint makes its own.
mkdir -p "$root/usr/sbin" "$root/etc/postgresql-common/createcluster.d"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.d/no-main.conf"
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
  "$root"/var/log/* "$root"/tmp/*

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/sh"]' \
  - "$tag" >&2
echo "$tag"
