#!/usr/bin/env bash
# Installs Valkey 9 (Debian sid) into bin/valkey9/ for tests and valkey-local.
# The host has Valkey 8 from bookworm-backports; 9.x needs a newer libc, so
# it gets its own minimal Debian tree and runs through that tree's loader,
# which needs no chroot:
#   bin/valkey9/lib64/ld-linux-x86-64.so.2 \
#     --library-path bin/valkey9/usr/lib/x86_64-linux-gnu \
#     bin/valkey9/usr/bin/valkey-server
# Safe to run again: an existing tree is kept.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${VALKEY9_DIR:-$ROOT/bin/valkey9}"
SUITE="${VALKEY9_SUITE:-sid}"
MIRROR="${VALKEY9_MIRROR:-http://deb.debian.org/debian}"

run9() {
  "$DIR/lib64/ld-linux-x86-64.so.2" --library-path "$DIR/usr/lib/x86_64-linux-gnu" "$DIR/usr/bin/$1" "${@:2}"
}

if [[ -x "$DIR/usr/bin/valkey-server" && -x "$DIR/usr/bin/valkey-cli" && -e "$DIR/lib64/ld-linux-x86-64.so.2" ]]; then
  run9 valkey-server --version >&2
  exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
  SUDO=sudo
else
  SUDO=""
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo ">> installing debootstrap" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq debootstrap >/dev/null
fi

# A half-finished tree from an interrupted run would make debootstrap fail.
TMP="$DIR.partial"
$SUDO rm -rf "$TMP"
mkdir -p "$(dirname "$DIR")"
echo ">> debootstrap $SUITE with valkey-server and valkey-tools into $DIR (about a minute)" >&2
$SUDO debootstrap --variant=minbase --include=valkey-server,valkey-tools "$SUITE" "$TMP" "$MIRROR" >&2
$SUDO rm -rf "$DIR"
$SUDO mv "$TMP" "$DIR"
if [[ -n "$SUDO" ]]; then
  $SUDO chown -R "$(id -u):$(id -g)" "$DIR" 2>/dev/null || true
fi
run9 valkey-server --version >&2
