# Options Record — `make help` lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

BIN      ?= bin
GOFLAGS  ?=
export GOFLAGS
# Under make, a test whose dependency (PostgreSQL, the control plane) cannot
# start fails; a plain `go test ./...` skips it with one line naming the make
# target that provides it (store/pgtest.Unavailable).
export OPTIONS_RECORD_REQUIRE_DEPS := 1
# Packages of the product module (the control-plane build modules under
# test/cpbuild, the Alertmanager build under test/ambuild, the witness build
# under test/wbuild and hack/tools are
# separate modules).
GO_PKGS  := ./...
TEST_TIMEOUT ?= 40m

# The release this build is: its version, commit and the commit's date,
# stamped into every binary (options-record, kubectl-record, the image) by
# VERSION_LDFLAGS, the one place they are set (api/version reads them). The
# date is the commit's, not the clock's, so a build is reproducible. A tree
# without a vX.Y.Z tag is v0.0.0-dev; `make release VERSION=v0.1.0` names it.
VERSION    ?= $(shell git describe --tags --always --dirty --match 'v[0-9]*' 2>/dev/null | grep '^v[0-9]' || echo v0.0.0-dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_PKG := github.com/options-record/options-record/api/version
VERSION_LDFLAGS = -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)

# Targets whose recipes need the real control-plane binaries (hack/make/controlplane.mk).
CONTROLPLANE_TEST_TARGETS := test test-e2e e2e test-controlplane-smoke
include hack/make/controlplane.mk
include hack/make/generate.mk
include hack/make/bench.mk
include hack/make/ship.mk
include hack/make/fault.mk
include hack/make/aggregated.mk
include hack/make/plugin.mk
include hack/make/release.mk

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-24s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install missing system packages (PostgreSQL server binaries, psql)
	@bash hack/ensure-deps.sh

.PHONY: build
build: ## Build bin/options-record and bin/audit-replay
	CGO_ENABLED=0 go build -trimpath -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/options-record ./cmd/options-record
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/audit-replay ./cmd/audit-replay

.PHONY: demo
demo: deps build ## Record a sample audit log on the embedded PostgreSQL and show who deleted what
	@bash hack/demo.sh

.PHONY: lint
lint: ## go vet, gofmt and the import layering (test/layering, also part of go test ./...)
	go vet $(GO_PKGS)
	go test -count=1 ./test/layering/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: test
test: deps lint verify ## Run every test: unit, integration (real PostgreSQL), end-to-end (real kube-apiserver), faults, bounded fuzzing, shipping checks
	go test -count=1 -timeout $(TEST_TIMEOUT) $(GO_PKGS)
	$(MAKE) fuzz-short
	cd test/shipcheck && go vet ./... && go test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd test/chart && go vet ./... && go test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd hack/release && go vet ./... && go test -count=1 ./...

.PHONY: test-short
test-short: ## Unit tests only (no PostgreSQL, no control plane)
	go test -short -count=1 $(GO_PKGS)

.PHONY: e2e
e2e: deps ## End-to-end tests against the real kube-apiserver, etcd and controller manager
	go test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e/...

.PHONY: test-e2e
test-e2e: e2e

.PHONY: clean
clean: ## Remove build output and the demo's data
	rm -rf $(BIN) .options-record/demo
