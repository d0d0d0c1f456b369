#!/usr/bin/env bash
# Installs Mesa's lavapipe (a CPU Vulkan driver) so the gpu target has a real WebGPU adapter on a
# machine without a GPU. Debian 12 ships Mesa 22.3, which Dawn rejects ("Vulkan
# shaderUniform*ArrayDynamicIndexing required"); bookworm-backports has Mesa >= 24, which works.
#
# Idempotent and non-interactive; run as root. When Mesa >= 24 is already installed it does nothing
# (one dpkg-query), so CI can call it on every run.
set -euo pipefail

readonly MIN_MESA_MAJOR=24
readonly SOURCES_DIR=/etc/apt/sources.list.d
readonly DEBIAN_SOURCES="$SOURCES_DIR/debian.sources"
readonly BACKPORTS_SOURCES="$SOURCES_DIR/bookworm-backports.sources"

log() { printf 'install-lavapipe: %s\n' "$*"; }

installed_version() {
  dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "installed" { print $2 }'
}

mesa_version="$(installed_version mesa-vulkan-drivers || true)"
loader_version="$(installed_version libvulkan1 || true)"
if [[ -n "$mesa_version" && -n "$loader_version" ]] \
  && dpkg --compare-versions "$mesa_version" ge "$MIN_MESA_MAJOR"; then
  log "already installed: mesa-vulkan-drivers $mesa_version, libvulkan1 $loader_version; nothing to do"
  exit 0
fi
log "found mesa-vulkan-drivers '${mesa_version:-none}', libvulkan1 '${loader_version:-none}'; need Mesa >= $MIN_MESA_MAJOR"

if [[ $EUID -ne 0 ]]; then
  log "must run as root (it adds an apt source and installs packages)" >&2
  exit 1
fi

# Is bookworm-backports already configured in a file apt reads (one-line or deb822 format)?
shopt -s nullglob
apt_source_files=(/etc/apt/sources.list "$SOURCES_DIR"/*.list "$SOURCES_DIR"/*.sources)
shopt -u nullglob
if grep -qsE '^[^#]*\bbookworm-backports\b' "${apt_source_files[@]}"; then
  log "an apt source for bookworm-backports already exists; not adding one"
else
  stanza=""
  if [[ -f "$DEBIAN_SOURCES" ]]; then
    # Copy the stanza that serves the `bookworm` suite, so the backports source uses the same
    # mirror and the same Signed-By key (a path or an inline key block); change only its Suites.
    # Stanzas are separated by blank lines; comment lines are dropped.
    stanza="$(awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        bookworm = 0
        for (i = 1; i <= NF; i++)
          if ($i ~ /^Suites:/ && (" " substr($i, 8) " ") ~ /[ \t]bookworm[ \t]/) bookworm = 1
        if (!bookworm) next
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^#/) continue
          if ($i ~ /^Suites:/) print "Suites: bookworm-backports"
          else print $i
        }
        exit
      }' "$DEBIAN_SOURCES")"
  elif [[ -f /etc/apt/sources.list ]]; then
    # Older layout: a one-line `deb [signed-by=KEY] URI bookworm main` in sources.list.
    stanza="$(awk '
      $1 == "deb" {
        key = "/usr/share/keyrings/debian-archive-keyring.gpg"; i = 2
        if ($2 ~ /^\[/) {
          for (; i <= NF; i++) {
            if ($i ~ /^\[?signed-by=/) { key = $i; sub(/^\[?signed-by=/, "", key); sub(/\]$/, "", key) }
            if ($i ~ /\]$/) { i++; break }
          }
        }
        if ($(i + 1) == "bookworm") {
          printf "Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n", $i, key
          exit
        }
      }' /etc/apt/sources.list)"
  fi
  if [[ -z "$stanza" ]] || ! grep -q '^URIs:' <<<"$stanza"; then
    log "found no Debian source for the suite 'bookworm' in $DEBIAN_SOURCES or /etc/apt/sources.list;" \
      "add a bookworm-backports source by hand" >&2
    exit 1
  fi
  printf '# Added by ufunc scripts/install-lavapipe.sh: Mesa >= 24 for Dawn (WebGPU) on lavapipe.\n%s\n' \
    "$stanza" >"$BACKPORTS_SOURCES"
  log "added $BACKPORTS_SOURCES:"
  sed 's/^/    /' "$BACKPORTS_SOURCES"
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
apt-get update -q
install_command=(apt-get install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers libvulkan1)
log "${install_command[*]}"
"${install_command[@]}"

mesa_version="$(installed_version mesa-vulkan-drivers || true)"
if ! dpkg --compare-versions "${mesa_version:-0}" ge "$MIN_MESA_MAJOR"; then
  log "installed mesa-vulkan-drivers '${mesa_version:-none}' is older than $MIN_MESA_MAJOR; Dawn will not accept it" >&2
  exit 1
fi
log "installed mesa-vulkan-drivers $mesa_version, libvulkan1 $(installed_version libvulkan1)"
if compgen -G '/usr/share/vulkan/icd.d/lvp_icd*.json' >/dev/null; then
  log "lavapipe ICD: $(echo /usr/share/vulkan/icd.d/lvp_icd*.json)"
fi
