# hack/make/ship.mk — what ships besides the code: the container image, the kind
# cluster that runs it, `kubectl apply -k deploy/`, and their checks
# (test/shipcheck, a separate Go module so kustomize, kind and BuildKit stay
# out of the product's go.mod). Included by the main Makefile after
# hack/make/controlplane.mk (ship-check runs the real control plane).
#
#   make image                       docker build -t $(IMAGE) .
#   make kind-up                     kind cluster + image + deploy + a recorded deletion
#   make deploy                      kubectl apply -k deploy/ (current context)
#   make ship-check                  the checks, also run by `make test`
#   make chart-check                 the Helm chart against deploy/ (test/chart), also run by `make test`
#
# image and kind-up need Docker (or another engine kind supports); kind
# itself comes from the Go module proxy when it is not installed.
#
# test/shipcheck uses the product module through a replace directive: after a
# dependency change in the product's go.mod, run `cd test/shipcheck && go mod
# tidy -e` (-e: a Windows-only import of testcontainers' graph names a
# module version the proxy no longer serves).

IMAGE        ?= options-record:dev
KIND_VERSION ?= v0.32.0
KIND         ?= $(if $(shell command -v kind 2>/dev/null),kind,go run sigs.k8s.io/kind@$(KIND_VERSION))
KIND_CLUSTER ?= options-record
KUBECTL      ?= kubectl
DOCKER       ?= docker
DEPLOY_DIR   ?= deploy
# Image layers dated by the last commit, for reproducible images
# (BuildKit's SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: image
image: ## Build the container image (IMAGE=options-record:dev) from the Dockerfile; needs Docker with BuildKit
	DOCKER_BUILDKIT=1 $(DOCKER) build --build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) --build-arg VERSION_LDFLAGS='$(VERSION_LDFLAGS)' -t $(IMAGE) .

.PHONY: kind-credentials
kind-credentials: ## Write kind-config/credentials/: the sink's CA, certificate, token and the apiserver's webhook kubeconfig
	cd test/shipcheck && go run ./cmd/kind-credentials \
		-dir $(CURDIR)/kind-config/credentials \
		-template $(CURDIR)/deploy/audit/webhook-kubeconfig.template.yaml

.PHONY: postgres-credentials
postgres-credentials: ## Write deploy/components/postgres/credentials/ (git-ignored): a random password for the demo PostgreSQL
	bash hack/ship/postgres-credentials.sh

.PHONY: kind-up
kind-up: kind-credentials postgres-credentials image ## kind cluster auditing to the sink: image loaded, kind-config/ applied, a deletion recorded and shown
	KIND='$(KIND)' KUBECTL='$(KUBECTL)' KIND_CLUSTER='$(KIND_CLUSTER)' IMAGE='$(IMAGE)' bash hack/ship/kind-up.sh

.PHONY: kind-down
kind-down: ## Delete the kind cluster of kind-up
	$(KIND) delete cluster --name $(KIND_CLUSTER)

.PHONY: deploy
deploy: ## kubectl apply -k deploy/ (DEPLOY_DIR=...) to the current context; create the sink's Secrets first (deploy/README.md)
	$(KUBECTL) apply -k $(DEPLOY_DIR)

.PHONY: ship-check
ship-check: ## Check deploy/ on the real apiserver (dry-run, RBAC as the sink), the kind config, Dockerfile, .dockerignore
	cd test/shipcheck && go vet ./... && go test -count=1 -timeout $(TEST_TIMEOUT) ./...

# test/chart is a module of its own too: Helm's SDK needs newer k8s.io
# modules than the product's go.mod pins (after a dependency change: `cd
# test/chart && go mod tidy -e`).
.PHONY: chart-check
chart-check: export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)
chart-check: ## Check the Helm chart (deploy/charts/options-record): same objects as deploy/, helm lint, NOTES, applied to the real apiserver
	cd test/chart && go vet ./... && go test -count=1 -timeout $(TEST_TIMEOUT) ./...

ship-check: export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)
