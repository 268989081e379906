#!/usr/bin/env bash
# Installs what a real Kubernetes node needs besides the kubelet (which
# hack/build-testbin.sh builds): containerd, runc, the CNI plugins
# (/usr/lib/cni), and iptables and conntrack for kube-proxy, from Debian,
# when any is missing. The containerd package starts a system-wide service;
# the real-node tests run their own containerd, so it is stopped.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

missing=()
have containerd || missing+=(containerd)
have runc || missing+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap && -x /usr/lib/cni/loopback ]] ||
  missing+=(containernetworking-plugins)
have iptables || missing+=(iptables)
have conntrack || missing+=(conntrack)
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  SUDO=sudo
else
  SUDO=""
fi

echo ">> installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [[ " ${missing[*]} " == *" containerd "* ]] && have systemctl; then
  $SUDO systemctl disable --now containerd >/dev/null 2>&1 || true
fi
containerd --version >&2
runc --version | head -n 1 >&2
