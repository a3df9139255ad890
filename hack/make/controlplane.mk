# hack/make/controlplane.mk — the real control plane (etcd, kube-apiserver,
# kube-controller-manager) that the e2e tests run, built from Go modules by
# test/cpbuild/build.sh and cached per version under
# $${OPTIONS_RECORD_CACHE:-$${XDG_CACHE_HOME:-~/.cache}/options-record}/controlplane/.
#
# Included by the main Makefile. Tests find the binaries through the
# OPTIONS_RECORD_CONTROLPLANE_DIR environment variable, which this fragment
# exports to the targets listed in CONTROLPLANE_TEST_TARGETS (set that before
# the include to add targets). By hand:
#   export OPTIONS_RECORD_CONTROLPLANE_DIR="$$(test/cpbuild/build.sh)"

CPBUILD ?= test/cpbuild/build.sh
CONTROLPLANE_TEST_TARGETS ?= test-e2e test-controlplane-smoke

# The binaries directory: evaluated lazily (only when a recipe of a target
# that needs it runs) and at most once per make run. A cold build takes a few
# minutes; a warm one is instant. Needs GNU make >= 4.2 (.SHELLSTATUS).
CONTROLPLANE_DIR = $(eval CONTROLPLANE_DIR := $(shell bash $(CPBUILD)))$(if $(filter 0,$(.SHELLSTATUS)),,$(error $(CPBUILD) failed))$(CONTROLPLANE_DIR)

$(CONTROLPLANE_TEST_TARGETS): export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)

.PHONY: controlplane
controlplane: ## Build (once per version) etcd, kube-apiserver, kube-controller-manager for e2e tests; print their dir
	@echo "$(CONTROLPLANE_DIR)"

.PHONY: test-controlplane-smoke
test-controlplane-smoke: ## Run the control-plane smoke test (real apiserver -> audit webhook)
	go test -count=1 -run '^TestControlPlaneSmoke$$' -v ./test/e2e/

.PHONY: controlplane-clean
controlplane-clean: ## Remove the cached control-plane binaries (all versions)
	rm -rf "$${OPTIONS_RECORD_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/options-record}/controlplane"
