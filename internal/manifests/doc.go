// Package manifests holds no code, only the tests of what installs the
// operator: the kustomize tree under config/, the Helm chart under charts/
// and the Prometheus samples. They render both the way kustomize and Helm
// do, and have a real apiserver (envtest) accept every object in a dry run.
package manifests
