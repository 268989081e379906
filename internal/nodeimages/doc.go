// Package nodeimages builds the container images the operator's rendered
// pods name, from the programs this machine already installs, so that the
// pods run on a real kubelet with containerd without a registry:
//
//   - valkey/valkey:8.0.1 from Debian's bookworm-backports valkey-server
//     (hack/install-valkey.sh),
//   - valkey/valkey:9.1.2 from the Debian tree in bin/valkey9
//     (hack/install-valkey9.sh),
//   - render.DefaultExporterImage from Debian's prometheus-redis-exporter,
//   - gomomento/valkey-operator:latest from cmd/valkey-operator, built as the
//     Dockerfile builds it,
//   - localhost/valkey-client:8.0.1, for tests: Debian's valkey-cli and
//     openssl, so a client pod runs the TLS page's checks as written.
//
// Each image is one layer holding the programs, every shared library ldd
// lists for them with the dynamic loader, and the files the rendered pod
// expects; its config is the published image's (entrypoint, command, user,
// working directory). Images are reproducible: fixed timestamps, sorted
// paths, numeric owners, so the same inputs give the same digest.
//
// Each is written as an OCI image layout tar (oci-layout, index.json,
// blobs/sha256/...) whose index entry carries the full name as
// io.containerd.image.name, which `ctr -n k8s.io images import` (containerd
// 1.6 and later) stores the image under with the manifest digest unchanged.
// A Docker-style tarball (go-containerregistry's tarball.Write) would import
// too, but containerd rewrites its manifest, so the digest it reports would
// not be the one built here.
package nodeimages
