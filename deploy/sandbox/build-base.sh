#!/usr/bin/env bash
# Builds the sandbox base image locally, without any image registry: a
# minimal Debian (shell, coreutils, Python 3) made with debootstrap and
# loaded with `docker import` (the steps are in deploy/base/lib.sh). Prints
# the tag, e.g. visor-sandbox-base:3f2a…; a machine that holds it reuses it.
# Environment: VISOR_SANDBOX_MIRROR, VISOR_SANDBOX_SUITE (see lib.sh).
set -euo pipefail
. "$(dirname "$0")/../base/lib.sh"

base_begin sandbox python3
base_debootstrap --include
base_slim
# Scripts run as uid/gid 1000, as in the production image.
base_user sandbox /workspace -M
base_import --change 'WORKDIR /workspace'
