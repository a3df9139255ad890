# hack/make/release.mk — a release's artefacts, without a Docker daemon:
#
#   make release VERSION=v0.1.0
#
# writes RELEASE_OUT (default _output/release/):
#   image/, options-record_VERSION_image.oci.tar   the sink's multi-arch OCI image
#                                   (RELEASE_PLATFORMS), an OCI layout (hack/release)
#   image.txt                       RELEASE_IMAGE:VERSION@sha256:... of its index
#   install.yaml                    deploy/ rendered, the image pinned by tag and digest
#   kubectl-record_OS_ARCH.tar.gz   the plugin's krew archives (hack/plugin/build.sh)
#   record.yaml                     their krew manifest
#   options-record-X.Y.Z.tgz        the Helm chart (helm package), stamped with
#                                   VERSION and the image's digest
#   SHA256SUMS                      every file above (sha256sum -c SHA256SUMS)
#
# Every binary carries VERSION_LDFLAGS (the Makefile's one stamp). Push and
# sign are the CI workflow's (.github/workflows/release.yaml):
#   crane push --index $(RELEASE_OUT)/image $(RELEASE_IMAGE):$(VERSION)
#   cosign sign --yes $$(cat $(RELEASE_OUT)/image.txt)
# Included by the main Makefile.

RELEASE_OUT       ?= _output/release
RELEASE_IMAGE     ?= ghcr.io/options-record/options-record
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
# A release refuses a tree whose deploy/charts/options-record/Chart.yaml
# (version, appVersion) or deploy/components/image (newTag) names another
# version than VERSION: a tag must not ship stale ones (docs/development.md,
# "Cutting a release"). RELEASE_SNAPSHOT=1 skips that check for a build
# that is not the tag's (test/shipcheck's TestRelease); its artefacts are
# stamped with VERSION all the same.
RELEASE_SNAPSHOT  ?=

.PHONY: release
release: ## Build a release into _output/release/ (VERSION=vX.Y.Z): multi-arch OCI image, install.yaml, Helm chart, krew archives, SHA256SUMS; no Docker needed
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "make release: VERSION=$(VERSION) is not a vX.Y.Z tag" >&2; exit 2 ;; esac
	$(if $(filter 1,$(RELEASE_SNAPSHOT)),,go run -C hack/release . -root $(CURDIR) -version $(VERSION) -check-version)
	rm -rf $(RELEASE_OUT)
	mkdir -p $(RELEASE_OUT)
	VERSION=$(VERSION) OUT=$(abspath $(RELEASE_OUT)) PLATFORMS="$(PLUGIN_PLATFORMS)" LDFLAGS='$(VERSION_LDFLAGS)' bash hack/plugin/build.sh
	go run -C hack/release . -root $(CURDIR) -out $(abspath $(RELEASE_OUT)) -image $(RELEASE_IMAGE) \
		-version $(VERSION) -commit '$(COMMIT)' -date '$(BUILD_DATE)' -ldflags '$(VERSION_LDFLAGS)' -platforms '$(RELEASE_PLATFORMS)'
	@cd $(RELEASE_OUT) && sha256sum -c --quiet SHA256SUMS && echo "make release: $(RELEASE_OUT)" && cat SHA256SUMS
