#!/usr/bin/env bash
# Builds the computer-use browser base image locally, without any image
# registry: a minimal Debian with Debian's Chromium, socat and a font,
# brought up to date from the security suite, loaded with `docker import`
# (the steps are in deploy/base/lib.sh). Prints the tag, e.g.
# visor-browser-base:3f2a…; a machine that holds it reuses it.
# Environment: VISOR_BROWSER_MIRROR, VISOR_BROWSER_SECURITY,
# VISOR_BROWSER_SUITE (see lib.sh).
set -euo pipefail
. "$(dirname "$0")/../base/lib.sh"

base_begin browser chromium,socat,fonts-dejavu-core,ca-certificates
base_debootstrap --apt
base_slim
# The browser runs as uid/gid 1000.
base_user browser /home/browser -m
base_import
