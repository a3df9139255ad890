# Benchmark of `options-record serve` (test/bench): a throwaway PostgreSQL
# with fsync on, the sink as a separate process, and a load generator posting
# audit EventLists over HTTPS like several kube-apiservers. It is a
# command, not a timed test; it prints a report and stops everything it
# started. Included by the main Makefile.
#
#   make bench                                 both mixes, as fast as the sink acknowledges (and the reference writer)
#   make bench BENCH_FLAGS='-rate 9600,36000'  offered load at 80% of the targets (ack latency)
#   make bench BENCH_FLAGS='-mix all -duration 60s -perf /tmp/perf'
#   make bench BENCH_COMPARE=/path/to/release/options-record   both builds, side by side, with ratios

BENCH_FLAGS ?=
BENCH_COMPARE ?=

.PHONY: bench
bench: deps ## Measure the sink: events/s, ack latency, peak RSS, CPU (sink vs PostgreSQL), bytes per kept event (BENCH_FLAGS=...)
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/options-record ./cmd/options-record
	go build -o $(BIN)/options-record-bench ./test/bench
	$(BIN)/options-record-bench -sink $(BIN)/options-record $(if $(BENCH_COMPARE),-compare $(BENCH_COMPARE)) $(BENCH_FLAGS)

# Load of the restore API on a real control plane (test/e2e
# TestRestoreAPIUnderLoad, skipped unless OPTIONS_RECORD_API_LOAD is set): a
# view-only caller's as-of plans of a 5,000-object namespace and undo plans
# of a busy user, 20 at a time, while the webhook keeps ingesting. Reports
# the sink's RSS and its ingest rate with and without the load.
.PHONY: bench-api
bench-api: export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)
bench-api: deps ## Load the restore API (as-of/undo plans, 20 at a time) and check the ingest keeps up
	OPTIONS_RECORD_API_LOAD=1 go test -count=1 -timeout 15m -run TestRestoreAPIUnderLoad -v ./test/e2e/

# Read benchmark (test/e2e TestReadBenchmark, skipped unless
# OPTIONS_RECORD_READ_BENCH is set): a record of BENCH_READ_VERSIONS object
# versions over 30 days on a real control plane, then p50/p99 of the
# incident's lookups through the direct API and through the aggregated API
# (the real kube-apiserver in front). BENCH_READ_DSN=postgres://... keeps the
# record in that database: written on the first run, only timed on the next.
BENCH_READ_VERSIONS ?= 5000000
BENCH_READ_DSN      ?=
.PHONY: bench-read
bench-read: export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)
bench-read: deps ## Time the lookups on a record of BENCH_READ_VERSIONS versions (default 5 M), through both front doors
	OPTIONS_RECORD_READ_BENCH=$(BENCH_READ_VERSIONS) OPTIONS_RECORD_READ_BENCH_DSN='$(BENCH_READ_DSN)' go test -count=1 -timeout 120m -run TestReadBenchmark -v ./test/e2e/ 2>&1 | grep -v '^\s*log_test.go'

# The observing webhook: its handler's cost per review (BenchmarkReview:
# ns/op, allocs), then the latency it adds to a write on a real control
# plane (test/e2e TestAdmissionLatency: p50/p99 of BENCH_ADMISSION_WRITES
# ConfigMap updates with and without it) and the observations confirmed per
# second.
BENCH_ADMISSION_WRITES ?= 500
.PHONY: bench-admission
bench-admission: export OPTIONS_RECORD_CONTROLPLANE_DIR = $(CONTROLPLANE_DIR)
bench-admission: deps ## Measure the observing webhook: cost per review, latency added to a write (p50/p99), confirmations/s
	go test -count=1 -run '^$$' -bench BenchmarkReview -benchmem ./auditsink/admission/
	OPTIONS_RECORD_ADMISSION_BENCH=$(BENCH_ADMISSION_WRITES) go test -count=1 -timeout 15m -run TestAdmissionLatency -v ./test/e2e/ 2>&1 | grep -E 'updates, one client|^(---|ok|FAIL)'
