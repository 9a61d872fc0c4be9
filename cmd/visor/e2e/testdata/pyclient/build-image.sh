#!/usr/bin/env bash
# Builds the image the end-to-end tests run the Python MCP client in:
# Debian with the official MCP Python SDK from Debian's own package
# (python3-mcp, in unstable), made with debootstrap and loaded with
# `docker import` like Visor's other local images (deploy/base/lib.sh).
# Prints the tag, visor-pyclient-base:HASH; a machine that holds it reuses
# it. CI starts it in the background early; the test runs it too, and the
# second build waits on the first one's lock and finds its image.
# Environment: VISOR_PYCLIENT_SUITE (default sid), VISOR_PYCLIENT_MIRROR
# (default http://deb.debian.org/debian, which carries sid).
set -euo pipefail
: "${VISOR_PYCLIENT_SUITE:=sid}" "${VISOR_PYCLIENT_MIRROR:=http://deb.debian.org/debian}"
export VISOR_PYCLIENT_SUITE VISOR_PYCLIENT_MIRROR
. "$(dirname "$0")/../../../../../deploy/base/lib.sh"

base_begin pyclient python3-mcp
base_debootstrap --include
base_slim
# The client script is not in the image: the test mounts it.
base_import
