#!/usr/bin/env bash
# Builds the workspace base image locally, without any image registry: a
# minimal Debian (shell, coreutils, Python 3, Git, CA certificates) made
# with debootstrap and loaded with `docker import` (the steps are in
# deploy/base/lib.sh). Prints the tag, e.g. visor-workspace-base:3f2a…; a
# machine that holds it reuses it.
# Environment: VISOR_WORKSPACE_MIRROR, VISOR_WORKSPACE_SUITE (see lib.sh).
set -euo pipefail
. "$(dirname "$0")/../base/lib.sh"

base_begin workspace python3,git,ca-certificates
base_debootstrap --include
base_slim
# Commands run as uid/gid 1000.
base_user worker /workspace -M
base_import --change 'WORKDIR /workspace'
