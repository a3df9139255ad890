# The kubectl plugin (cmd/kubectl-record): archives for krew and the krew
# manifest naming them with their sha256 (hack/plugin/build.sh). Included by
# the main Makefile. The archives are reproducible byte for byte: the
# script pins the Go toolchain (GO_TOOLCHAIN), builds with -trimpath
# -buildvcs=false, and fixes modes, times and owners whatever the umask.

PLUGIN_VERSION ?= $(VERSION)
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: plugin
plugin: ## Build kubectl-record archives (linux/darwin, amd64/arm64) and the krew manifest into _output/plugin/
	VERSION=$(PLUGIN_VERSION) PLATFORMS="$(PLUGIN_PLATFORMS)" LDFLAGS='$(VERSION_LDFLAGS)' bash hack/plugin/build.sh

.PHONY: kubectl-record
kubectl-record: ## Build bin/kubectl-record for this machine (put bin/ on PATH: kubectl record ...)
	go build -ldflags '$(VERSION_LDFLAGS)' -o bin/kubectl-record ./cmd/kubectl-record
