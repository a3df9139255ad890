# mk/aggregated.mk — code generation for the aggregated API prototype
# (issue 15): deepcopy by controller-gen (as for api/), OpenAPI definitions
# and model names by kube-openapi's openapi-gen, both pinned in
# hack/tools/go.mod. Included by the main Makefile.

OPENAPI_GEN ?= go tool -modfile=hack/tools/go.mod openapi-gen

.PHONY: generate-aggregated
generate-aggregated: ## Regenerate the aggregated API's deepcopy, OpenAPI definitions and model names
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./aggregated/apis/...
	$(OPENAPI_GEN) --output-dir aggregated/openapi \
		--output-pkg github.com/options-record/options-record/aggregated/openapi \
		--output-file zz_generated.openapi.go \
		--output-model-name-file zz_generated.model_name.go \
		--readonly-pkg k8s.io/apimachinery/pkg/apis/meta/v1 \
		--readonly-pkg k8s.io/apimachinery/pkg/runtime \
		--readonly-pkg k8s.io/apimachinery/pkg/version \
		--go-header-file hack/boilerplate.go.txt \
		--report-filename aggregated/openapi/violations.report \
		k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime \
		k8s.io/apimachinery/pkg/version ./aggregated/apis/record/v1alpha1
