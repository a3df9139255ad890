# Fault tests and fuzzing. Included by the main Makefile.
#
# The fault tests (test/fault) run bin/options-record as real processes on a
# throwaway PostgreSQL and kill it, stop its database, lock its tables and
# fill its journal disk; `go test ./...` (so `make test`) runs them, and
# `make test-fault` runs them alone, verbosely.
#
# Fuzzing: `make test` runs each of FUZZ_SHORT_TARGETS for FUZZ_SHORT_EXECS
# executions; `make fuzz` runs every fuzz target of the module for FUZZTIME each.
#
# The short run counts executions instead of seconds on purpose: a duration
# budget races Go's fuzzing coordinator at the deadline (golang/go#75804) and
# fails now and then with a bare "context deadline exceeded" and no crasher,
# above all on a loaded 2-core CI machine. A count has no deadline to race; the
# -timeout still stops a target that hangs.
#
#   make fuzz                                  every target, 2 minutes each
#   make fuzz FUZZTIME=30m FUZZ_RUN=FuzzDecodeEventList

FUZZTIME          ?= 2m
FUZZ_SHORT_EXECS  ?= 20000x
FUZZ_SHORT_TIMEOUT ?= 5m
FUZZ_MINIMIZETIME ?= 5s
# Run only the fuzz targets whose name matches this regexp.
FUZZ_RUN          ?= .
# package:target pairs fuzzed on every `make test`.
FUZZ_SHORT_TARGETS := ./auditsink/decode:FuzzDecodeEventList ./auditsink/decode:FuzzLines ./auditsink/pubsub:FuzzConvert ./auditsink/journal:FuzzScanSegment ./filter:FuzzCompile ./api/restore/manifest:FuzzCleanManifest ./api/escape:FuzzEscape ./store/model/jsonscan:FuzzScan ./store/model/jsonfast:FuzzPathsAgree

.PHONY: test-fault
test-fault: deps ## Fault tests: kill -9, database outage, slow database, SIGTERM, full journal disk (real processes)
	go test -count=1 -timeout 15m -v ./test/fault/

.PHONY: fuzz-short
fuzz-short: ## Bounded fuzzing of the ingest decoder, the JSON scanner, the journal scan, the rule compiler, the manifest cleaner and the escape (FUZZ_SHORT_EXECS executions each; part of make test)
	@set -e; for pt in $(FUZZ_SHORT_TARGETS); do \
		pkg=$${pt%%:*}; target=$${pt##*:}; \
		echo "go test -run='^$$' -fuzz='^$$target\$$' -fuzztime=$(FUZZ_SHORT_EXECS) $$pkg"; \
		go test -list="^$$target\$$" $$pkg | grep -qx "$$target" \
			|| { echo "fuzz-short: $$pkg has no fuzz target $$target (moved or renamed?)" >&2; exit 1; }; \
		go test -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZ_SHORT_EXECS) -fuzzminimizetime=$(FUZZ_MINIMIZETIME) -timeout=$(FUZZ_SHORT_TIMEOUT) $$pkg; \
	done

.PHONY: fuzz
fuzz: ## Fuzz every fuzz target of the module for FUZZTIME each (FUZZ_RUN=regexp to choose)
	@set -e; git ls-files '*_test.go' | grep -v '^test/cpbuild/' | xargs grep -H '^func Fuzz' \
	| sed -E 's#^(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]*).*#./\1 \2#' | grep -E ' .*$(FUZZ_RUN)' \
	| while read -r pkg target; do \
		echo "== $$pkg $$target ($(FUZZTIME))"; \
		go test -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZ_MINIMIZETIME) $$pkg </dev/null; \
	done
