#!/usr/bin/env bash
# Installs valkey-server and valkey-tools (8.x) from Debian bookworm-backports
# when they are missing, adding the backports source if it is absent.
set -euo pipefail

if command -v valkey-server >/dev/null 2>&1 && command -v valkey-cli >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  SUDO=sudo
else
  SUDO=""
fi
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
# The package starts a system-wide server on 127.0.0.1:6379; tests give each
# pod its own address, but a stray listener on the production port is noise.
if command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now valkey-server >/dev/null 2>&1 || true
fi
pkill -x valkey-server 2>/dev/null || true
valkey-server --version >&2
