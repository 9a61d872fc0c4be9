#!/usr/bin/env bash
# Builds, without any image registry, the one local base image the stack's
# Postgres, Redis and Visor containers use where the public images cannot
# be pulled (tests, CI, air-gapped hosts): a minimal Debian with
# postgresql-15 and redis-server, loaded with `docker import` (the steps
# are in deploy/base/lib.sh). Prints the tag, e.g. visor-local-base:1a2b…;
# a machine that holds it reuses it.
# Environment: VISOR_LOCAL_MIRROR, VISOR_LOCAL_SUITE (see lib.sh).
set -euo pipefail
. "$(dirname "$0")/../base/lib.sh"

base_begin local postgresql-15,redis-server,ca-certificates
# Services are never started inside the chroot (policy-rc.d), and Debian's
# default cluster is not created: the entrypoint makes its own.
mkdir -p "$base_root/usr/sbin" "$base_root/etc/postgresql-common/createcluster.d"
printf '#!/bin/sh\nexit 101\n' >"$base_root/usr/sbin/policy-rc.d"
chmod +x "$base_root/usr/sbin/policy-rc.d"
echo 'create_main_cluster = false' >"$base_root/etc/postgresql-common/createcluster.d/no-main.conf"
base_debootstrap --include
base_slim
base_import
