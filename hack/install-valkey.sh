#!/usr/bin/env bash
# Installs valkey-server and valkey-tools (8.x) from Debian bookworm-backports
# when they are missing, adding the backports source if it is absent, and
# the metrics exporter the local runtime runs for oliver006/redis_exporter
# images (prometheus-redis-exporter 1.45.0, bookworm).
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if have valkey-server && have valkey-cli && have prometheus-redis-exporter; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  SUDO=sudo
else
  SUDO=""
fi
# The packages start system-wide services (valkey on 127.0.0.1:6379, the
# exporter on :9121); tests give each pod its own address, but stray
# listeners on the production ports are noise.
stop_service() {
  if have systemctl; then
    $SUDO systemctl disable --now "$1" >/dev/null 2>&1 || true
  fi
}

if ! have valkey-server || ! have valkey-cli; then
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo ">> adding bookworm-backports to apt sources" >&2
    $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  echo ">> installing valkey from bookworm-backports" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null
  stop_service valkey-server
  pkill -x valkey-server 2>/dev/null || true
fi
valkey-server --version >&2

if ! have prometheus-redis-exporter; then
  echo ">> installing prometheus-redis-exporter" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus-redis-exporter >/dev/null
  stop_service prometheus-redis-exporter
fi
prometheus-redis-exporter --version >&2
