# Code generation: deepcopy functions and the CRD YAML, both produced by
# controller-gen from the Go types in api/ (the CRD from api/v1alpha1 only:
# api/record holds the aggregated API's types, served, not stored), and the
# aggregated API's OpenAPI definitions (hack/make/aggregated.mk), and the typed client of the
# record (client-gen, from the +genclient tags of api/record/v1alpha1: a clientset without
# listers or informers, for kubectl-record and any other tool). The generators are pinned in the
# separate module hack/tools (a go.mod `tool` directive), so its dependencies
# stay out of the product's go.mod. Included by the main Makefile.

CONTROLLER_GEN ?= go tool -modfile=hack/tools/go.mod controller-gen
CLIENT_GEN ?= go tool -modfile=hack/tools/go.mod client-gen

# The files `generate` writes, as git pathspecs. Only these are checked by
# `verify`, so work in progress elsewhere under api/ does not fail it.
GENERATED_PATHSPECS := ':(glob)api/**/zz_generated.*.go' deploy/crd deploy/charts/options-record/crds api/aggregated/openapi api/record/clientset

.PHONY: generate
generate: ## Regenerate deepcopy functions (api/), the CRD YAML (deploy/crd/), the record's typed client (api/record/clientset/) and the aggregated API's OpenAPI (api/aggregated/openapi/)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/v1alpha1/... paths=./api/record/v1alpha1/...
	$(CONTROLLER_GEN) crd paths=./api/v1alpha1/... output:crd:artifacts:config=deploy/crd
	cp deploy/crd/optionsrecord.io_optionsrecordcontrollers.yaml deploy/charts/options-record/crds/
	rm -rf api/record/clientset
	$(CLIENT_GEN) --clientset-name versioned --fake-clientset=false \
		--input-base github.com/options-record/options-record/api --input record/v1alpha1 \
		--output-dir api/record/clientset --output-pkg github.com/options-record/options-record/api/record/clientset \
		--go-header-file hack/boilerplate.go.txt
	$(MAKE) --no-print-directory generate-openapi

.PHONY: verify
verify: verify-generate verify-tidy verify-flags ## Check that everything generated is up to date, go.mod is tidy and docs/command-line-flags.txt matches --help

.PHONY: verify-flags
verify-flags: ## Fail when docs/command-line-flags.txt differs from the commands' --help
	go test -count=1 -run '^TestFlagReference$$' ./cmd/options-record/app/options/

.PHONY: verify-tidy
verify-tidy: ## Fail when go mod tidy would change go.mod or go.sum
	@go mod tidy -diff >/dev/null 2>&1 || { echo "go.mod/go.sum are not tidy; run 'go mod tidy' and commit the result:" >&2; go mod tidy -diff >&2; exit 1; }

.PHONY: verify-generate
verify-generate: generate ## Regenerate, then fail if the generated files differ from git
	@stale=$$(git status --porcelain --untracked-files=all -- $(GENERATED_PATHSPECS)); \
	if [ -n "$$stale" ]; then \
		echo "generated files are out of date; run 'make generate' and commit the result:" >&2; \
		echo "$$stale" >&2; \
		git --no-pager diff -- $(GENERATED_PATHSPECS) >&2; \
		exit 1; \
	fi
