# Shared steps of the scripts that build Visor's local base images without
# any image registry: a minimal Debian root filesystem made with debootstrap
# from the machine's Debian mirror and loaded with `docker import`.
#
# A build script sources this file and calls, in order:
#
#   base_begin NAME PACKAGES   # tag by content hash; print it and exit if held
#   base_debootstrap [--include | --apt]
#   base_slim                  # drop package caches, docs and locales
#   base_user NAME HOME [-m|-M]
#   base_import [--change …]   # docker import; prints the tag
#
# The tag is visor-NAME-base:HASH, where HASH covers the calling script, this
# file, the suite, the mirrors and the package list, so a machine that holds
# the image reuses it and a changed input builds a new one. Only the tag is
# printed on stdout. Builds of one image that run at the same time (parallel
# tests) take turns under a lock; the second finds the first one's image.
#
# Environment, per image (NAME in capitals): VISOR_NAME_MIRROR (default: the
# first Debian URI in the apt sources, else http://deb.debian.org/debian),
# VISOR_NAME_SECURITY (for --apt; default: the mirror's host with
# /debian-security) and VISOR_NAME_SUITE (default bookworm).

base_begin() {
  base_name=$1 base_packages=$2
  local upper
  upper=$(printf '%s' "$base_name" | tr '[:lower:]' '[:upper:]')
  local v_suite="VISOR_${upper}_SUITE" v_mirror="VISOR_${upper}_MIRROR" v_security="VISOR_${upper}_SECURITY"
  base_suite=${!v_suite:-bookworm}
  base_mirror=${!v_mirror:-}
  if [ -z "$base_mirror" ]; then
    base_mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
      grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
    base_mirror=${base_mirror:-http://deb.debian.org/debian}
  fi
  base_mirror=${base_mirror%/}
  base_security=${!v_security:-${base_mirror%/debian}/debian-security}

  local hash
  hash=$( { cat "$0" "${BASH_SOURCE[0]}"; printf '%s\n' "$base_suite" "$base_mirror" "$base_security" "$base_packages"; } |
    sha256sum | cut -c1-16)
  base_tag=visor-$base_name-base:$hash
  if base_held; then echo "$base_tag"; exit 0; fi
  command -v debootstrap >/dev/null ||
    { echo "build-base: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

  exec 9>"/tmp/visor-$base_name-base.lock"
  flock 9
  if base_held; then echo "$base_tag"; exit 0; fi

  base_root=$(mktemp -d "/tmp/visor-$base_name-rootfs.XXXXXX")
  trap 'umount "$base_root/proc" 2>/dev/null || true; rm -rf "$base_root"' EXIT
}

base_held() { docker image inspect "$base_tag" >/dev/null 2>&1; }

# base_debootstrap --include: the packages come with debootstrap itself.
# base_debootstrap --apt: debootstrap makes the bare system, then apt inside
# it installs the packages from the suite, its updates and its security
# suite, so they are at their patched versions (and apt orders many
# dependencies, which --include cannot).
base_debootstrap() {
  case ${1:---include} in
  --include)
    echo "build-base: debootstrap $base_suite ($base_packages) from $base_mirror" >&2
    debootstrap --variant=minbase --include="$base_packages" "$base_suite" "$base_root" "$base_mirror" >&2
    ;;
  --apt)
    echo "build-base: debootstrap $base_suite from $base_mirror, then apt ($base_packages)" >&2
    debootstrap --variant=minbase "$base_suite" "$base_root" "$base_mirror" >&2
    cat >"$base_root/etc/apt/sources.list" <<SOURCES
deb $base_mirror $base_suite main
deb $base_mirror $base_suite-updates main
deb $base_security $base_suite-security main
SOURCES
    mount -t proc proc "$base_root/proc"
    chroot "$base_root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade &&
      DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends $(echo "$base_packages" | tr , ' ')" >&2
    umount "$base_root/proc"
    ;;
  *) echo "build-base: unknown mode $1" >&2; exit 2 ;;
  esac
}

# A smaller image: no package caches, documentation or locales.
base_slim() {
  rm -rf "$base_root"/var/cache/apt/archives/*.deb "$base_root"/var/lib/apt/lists/* \
    "$base_root"/usr/share/doc/* "$base_root"/usr/share/man/* "$base_root"/usr/share/locale/* \
    "$base_root"/var/log/* "$base_root"/tmp/*
}

# base_user NAME HOME FLAG: the unprivileged user (uid/gid 1000) the image's
# programs run as; FLAG is useradd's -m (make HOME) or -M (do not).
base_user() {
  chroot "$base_root" sh -c "groupadd -g 1000 $1 && useradd -u 1000 -g 1000 $3 -d $2 -s /bin/sh $1"
}

base_import() {
  tar -C "$base_root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/sh"]' \
    "$@" - "$base_tag" >&2
  echo "$base_tag"
}
