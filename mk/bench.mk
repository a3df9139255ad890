# Benchmark of `options-record serve` (test/bench): a throwaway PostgreSQL
# with fsync on, the sink as a separate process, and a load generator posting
# audit EventLists over HTTPS like several kube-apiservers. It is a
# command, not a timed test; it prints a report and stops everything it
# started. Included by the main Makefile.
#
#   make bench                                 both mixes, as fast as the sink acknowledges
#   make bench BENCH_FLAGS='-rate 9600,36000'  offered load at 80% of the targets (ack latency)
#   make bench BENCH_FLAGS='-mix all -duration 60s -perf /tmp/perf'

BENCH_FLAGS ?=

.PHONY: bench
bench: deps ## Measure the sink: events/s, ack latency, peak RSS, CPU (sink vs PostgreSQL), bytes per kept event (BENCH_FLAGS=...)
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/options-record ./cmd/options-record
	go build -o $(BIN)/options-record-bench ./test/bench
	$(BIN)/options-record-bench -sink $(BIN)/options-record $(BENCH_FLAGS)
