#!/usr/bin/env bash
# Builds the test control plane from the Go module proxy into bin/testbin/:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler, and the
# S3-compatible server (versitygw) the backup tests write to, and the node
# components (kubelet, kube-proxy), cluster DNS (CoreDNS) and the image
# registry (distribution) the real-node tests run.
# Prebuilt envtest archives are not always reachable, so we compile the real
# components ourselves. A build is reused when its stamp matches the versions.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
REGISTRY_VERSION="${REGISTRY_VERSION:-v3.1.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${TESTBIN_DIR:-$ROOT/bin/testbin}"
STAMP="$OUT/.stamp"
WANT="kube=$KUBE_VERSION etcd=$ETCD_VERSION"
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)

have_all() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$OUT/etcd" ]] || return 1
  for c in "${COMPONENTS[@]}"; do [[ -x "$OUT/$c" ]] || return 1; done
}

mkdir -p "$OUT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod"
export CGO_ENABLED=0

# versitygw has its own stamp, so adding it does not rebuild the control plane.
S3_STAMP="$OUT/.stamp-versitygw"
if [[ ! -f "$S3_STAMP" || "$(cat "$S3_STAMP")" != "versitygw=$VERSITYGW_VERSION" || ! -x "$OUT/versitygw" ]]; then
  echo ">> building versitygw $VERSITYGW_VERSION" >&2
  mkdir -p "$WORK/versitygw" && (
    cd "$WORK/versitygw"
    go mod init testbin/versitygw >/dev/null 2>&1
    go get "github.com/versity/versitygw@$VERSITYGW_VERSION" >/dev/null
    go build -trimpath -o "$OUT/versitygw" github.com/versity/versitygw/cmd/versitygw
  )
  echo "versitygw=$VERSITYGW_VERSION" >"$S3_STAMP"
fi

# CoreDNS is its own module too, so its Kubernetes dependencies never meet ours.
DNS_STAMP="$OUT/.stamp-coredns"
if [[ ! -f "$DNS_STAMP" || "$(cat "$DNS_STAMP")" != "coredns=$COREDNS_VERSION" || ! -x "$OUT/coredns" ]]; then
  echo ">> building coredns $COREDNS_VERSION" >&2
  mkdir -p "$WORK/coredns" && (
    cd "$WORK/coredns"
    go mod init testbin/coredns >/dev/null 2>&1
    go get "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null
    go build -trimpath -o "$OUT/coredns" github.com/coredns/coredns
  )
  echo "coredns=$COREDNS_VERSION" >"$DNS_STAMP"
fi

# The distribution registry (a private registry with authentication for the
# pull-secret tests) is its own module as well, with its own stamp.
REG_STAMP="$OUT/.stamp-registry"
if [[ ! -f "$REG_STAMP" || "$(cat "$REG_STAMP")" != "registry=$REGISTRY_VERSION" || ! -x "$OUT/registry" ]]; then
  echo ">> building registry $REGISTRY_VERSION" >&2
  mkdir -p "$WORK/registry" && (
    cd "$WORK/registry"
    go mod init testbin/registry >/dev/null 2>&1
    go get "github.com/distribution/distribution/v3@$REGISTRY_VERSION" >/dev/null
    go build -trimpath -o "$OUT/registry" github.com/distribution/distribution/v3/cmd/registry
  )
  echo "registry=$REGISTRY_VERSION" >"$REG_STAMP"
fi

# kubelet and kube-proxy have their own stamp too: adding them reuses an
# existing control plane build, and a control plane rebuild redoes them only
# when the Kubernetes version changes.
NODE_STAMP="$OUT/.stamp-node"
NODE_WANT="kube=$KUBE_VERSION"
NODE_COMPONENTS=(kubelet kube-proxy)

have_node() {
  [[ -f "$NODE_STAMP" && "$(cat "$NODE_STAMP")" == "$NODE_WANT" ]] || return 1
  for c in "${NODE_COMPONENTS[@]}"; do [[ -x "$OUT/$c" ]] || return 1; done
}

# kube_module prepares, once, a module in $WORK/kube that requires
# k8s.io/kubernetes at KUBE_VERSION, and sets ldflags to stamp the version.
kube_ready=""
kube_module() {
  [[ -n "$kube_ready" ]] && return 0
  mkdir -p "$WORK/kube"
  (
    cd "$WORK/kube"
    go mod init testbin/kube >/dev/null 2>&1
    modjson="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"
    gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' <<<"$modjson")"
    staging_minor="v0.${KUBE_VERSION#v1.}"
    # k8s.io/kubernetes replaces its staging modules with local paths; point
    # each at the release published with the same minor/patch instead.
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk '{print $1}' | while read -r m; do
      go mod edit -replace "$m=$m@$staging_minor"
    done
    go mod edit -require "k8s.io/kubernetes@$KUBE_VERSION"
  )
  local ver major rest minor pkg
  ver="${KUBE_VERSION#v}"
  major="${ver%%.*}"
  rest="${ver#*.}"
  minor="${rest%%.*}"
  ldflags=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X '$pkg.gitVersion=$KUBE_VERSION' -X '$pkg.gitMajor=$major' -X '$pkg.gitMinor=$minor'"
    ldflags+=" -X '$pkg.gitTreeState=clean' -X '$pkg.gitCommit=0000000000000000000000000000000000000000'"
    ldflags+=" -X '$pkg.buildDate=1970-01-01T00:00:00Z'"
  done
  kube_ready=1
}

kube_build() {
  local c
  for c in "$@"; do
    echo ">> go build $c" >&2
    (cd "$WORK/kube" && go build -trimpath -ldflags "$ldflags" -o "$OUT/$c" "k8s.io/kubernetes/cmd/$c")
  done
}

if ! have_all; then
  echo ">> building etcd $ETCD_VERSION" >&2
  mkdir -p "$WORK/etcd"
  (
    cd "$WORK/etcd"
    go mod init testbin/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    go build -trimpath -o "$OUT/etcd" go.etcd.io/etcd/server/v3
  )
  echo ">> building kubernetes $KUBE_VERSION (${COMPONENTS[*]}); the first build takes minutes" >&2
  kube_module
  kube_build "${COMPONENTS[@]}"
  echo "$WANT" >"$STAMP"
  echo ">> test control plane ready in $OUT" >&2
fi

if ! have_node; then
  echo ">> building kubernetes $KUBE_VERSION node components (${NODE_COMPONENTS[*]})" >&2
  kube_module
  kube_build "${NODE_COMPONENTS[@]}"
  echo "$NODE_WANT" >"$NODE_STAMP"
  echo ">> node components ready in $OUT" >&2
fi
