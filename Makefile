# The two commands a newcomer needs:
#   make test        build the test control plane when missing, install valkey when missing, run every test
#   make demo        run a local control plane + node runtime + operator + a sample TLS cluster
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
TESTBIN := bin/testbin
GOTEST_FLAGS ?= -count=1 -timeout 75m

.PHONY: all
all: generate build

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs and RBAC from the markers.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=valkey-operator paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: build
build: ## Build every command into bin/.
	$(GO) build -o bin/ ./cmd/...

.PHONY: lint
lint: ## go vet and a gofmt check.
	$(GO) vet ./...
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi

.PHONY: testbin
testbin: ## Build etcd and the Kubernetes control plane from the Go module proxy (cached).
	hack/build-testbin.sh

.PHONY: valkey
valkey: ## Install Valkey 8 from bookworm-backports and the Valkey 9 test build when missing.
	hack/install-valkey.sh
	hack/install-valkey9.sh

.PHONY: test
test: testbin valkey lint ## Run every test against a real apiserver and real valkey-server.
	$(GO) test $(GOTEST_FLAGS) ./...

.PHONY: demo
demo: testbin valkey ## The local playground: control plane, node runtime, operator and a sample TLS cluster.
	$(GO) run ./cmd/valkey-local demo

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "%-12s %s\n", $$1, $$2}'
