#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (tests/browser, tests/bundle), which drive it
# headless through playwright-core. On a machine without a GPU, Chromium's SwiftShader gives pages a
# working `navigator.gpu`, so the gpu target is tested in the page too.
#
# Idempotent and non-interactive; run as root. When /usr/bin/chromium already exists it does nothing,
# so CI can call it on every run. Once it is installed, the browser tests run and fail (never skip).
set -euo pipefail

log() { printf 'install-chromium: %s\n' "$*"; }

if [[ -x /usr/bin/chromium ]]; then
  log "already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium); nothing to do"
  exit 0
fi
if [[ $EUID -ne 0 ]]; then
  log "must run as root (it installs the Debian package chromium)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
apt-get update -q
log "apt-get install -y -q --no-install-recommends chromium"
apt-get install -y -q --no-install-recommends chromium
log "installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
