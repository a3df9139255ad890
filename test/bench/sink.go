package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgembed"
	"github.com/options-record/options-record/test/bench/workload"
)

// env is one mix's throwaway PostgreSQL and sink process.
type env struct {
	dir      string // temporary; removed by close unless kept
	keep     bool
	pg       *pgembed.Server
	pgPID    int
	dsn      string
	sink     *exec.Cmd
	sinkDone chan struct{}
	sinkErr  error
	sinkLog  string
	webhook  string // https://127.0.0.1:port/
	metrics  string // http://127.0.0.1:port
	caFile   string
	token    string
}

// startEnv starts PostgreSQL (fsync on) in a temporary directory, then the
// sink on it as a separate process, and waits until the sink is ready.
// On error everything started is stopped again.
func startEnv(ctx context.Context, o options) (_ *env, err error) {
	dir, err := os.MkdirTemp(os.TempDir(), "options-record-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	e := &env{dir: dir, keep: o.keep}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	// PostgreSQL runs as the postgres account when we are root: it must be
	// able to enter the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	pgCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	e.pg, err = pgembed.Start(pgCtx, pgembed.Options{
		DataDir:  filepath.Join(dir, "pg"),
		BinDir:   o.pgBinDir,
		Fsync:    true, // durability is part of what is measured
		Settings: o.pgSet,
	})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	e.dsn = e.pg.ConnString()
	if e.pgPID, err = postmasterPID(filepath.Join(dir, "pg", "pgdata")); err != nil {
		return nil, err
	}

	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(workload.RulesYAML), 0o644); err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	webhookAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	sinkDir := filepath.Join(dir, "sink")
	e.sinkLog = filepath.Join(dir, "sink.log")
	logf, err := os.Create(e.sinkLog)
	if err != nil {
		return nil, fmt.Errorf("sink log: %w", err)
	}
	defer logf.Close()
	args := []string{"serve",
		"--database-url", e.dsn,
		"--data-dir", sinkDir,
		"--rules-file", rules,
		"--webhook-bind-address", webhookAddr,
		"--metrics-bind-address", metricsAddr,
		"--log-level", "warn",
	}
	if o.tamperLog && hasTamperLog(o.sinkBin) {
		key := filepath.Join(dir, "log.key")
		if out, err := exec.Command(o.sinkBin, "log-key", "--name", "bench.example/log", "--log-signing-key-file", key).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("log-key: %w: %s", err, out)
		}
		args = append(args, "--log-signing-key-file", key, "--checkpoint-dir", filepath.Join(dir, "checkpoints"))
	}
	cmd := exec.Command(o.sinkBin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "OPTIONS_RECORD_DATABASE_URL=")
	// Its own process group, so a terminal's Ctrl-C reaches only the bench,
	// which stops the sink before PostgreSQL; and SIGTERM if the bench dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", o.sinkBin, err)
	}
	e.sink, e.sinkDone = cmd, make(chan struct{})
	go func() {
		e.sinkErr = cmd.Wait()
		close(e.sinkDone)
	}()
	e.webhook = "https://" + webhookAddr + "/audit?timeout=30s"
	e.metrics = "http://" + metricsAddr
	if err := e.waitReady(ctx); err != nil {
		return nil, err
	}
	e.caFile = filepath.Join(sinkDir, "tls", "ca.crt")
	tok, err := os.ReadFile(filepath.Join(sinkDir, "webhook-token"))
	if err != nil {
		return nil, fmt.Errorf("webhook token: %w", err)
	}
	e.token = strings.TrimSpace(string(tok))
	return e, nil
}

// freeAddr returns a free loopback address.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (e *env) waitReady(ctx context.Context) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.Get(e.metrics + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		select {
		case <-e.sinkDone:
			return fmt.Errorf("the sink exited (%v) before it was ready: %s", e.sinkErr, e.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the sink was not ready after 60 s (last: %s): %s", last, e.logTail())
}

// logTail is the end of the sink's log, for error messages.
func (e *env) logTail() string {
	b, _ := os.ReadFile(e.sinkLog)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	if len(b) == 0 {
		return "(empty log)"
	}
	return "sink log:\n" + string(b)
}

// sinkAlive reports an error if the sink exited.
func (e *env) sinkAlive() error {
	select {
	case <-e.sinkDone:
		return fmt.Errorf("the sink exited: %v: %s", e.sinkErr, e.logTail())
	default:
		return nil
	}
}

// stopSink stops the sink gracefully (SIGTERM: it drains in-flight batches),
// then kills it after 40 s.
func (e *env) stopSink() {
	if e.sink == nil {
		return
	}
	select {
	case <-e.sinkDone:
		return
	default:
	}
	_ = e.sink.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.sinkDone:
	case <-time.After(40 * time.Second):
		_ = syscall.Kill(-e.sink.Process.Pid, syscall.SIGKILL)
		<-e.sinkDone
	}
}

// close stops the sink, then PostgreSQL, and removes the directory.
func (e *env) close() {
	e.stopSink()
	if e.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := e.pg.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "bench: stopping PostgreSQL: %v\n", err)
		}
		cancel()
	}
	if e.keep {
		fmt.Fprintf(os.Stderr, "bench: kept %s\n", e.dir)
		return
	}
	if err := os.RemoveAll(e.dir); err != nil {
		fmt.Fprintf(os.Stderr, "bench: removing %s: %v\n", e.dir, err)
	}
}

// pgInfo is what the report says about the database.
type pgInfo struct {
	version  string
	settings string
}

func (e *env) describePG(ctx context.Context) (pgInfo, error) {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return pgInfo{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var info pgInfo
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&info.version); err != nil {
		return info, fmt.Errorf("server_version: %w", err)
	}
	var parts []string
	for _, s := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "wal_buffers", "max_wal_size", "default_toast_compression"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", s).Scan(&v); err != nil {
			return info, fmt.Errorf("%s: %w", s, err)
		}
		parts = append(parts, s+"="+v)
	}
	var checksums string
	if err := conn.QueryRow(ctx, "SHOW data_checksums").Scan(&checksums); err == nil {
		parts = append(parts, "data_checksums="+checksums)
	}
	info.settings = strings.Join(parts, " ")
	return info, nil
}

// keepDays creates the event partitions of the past days, empty: a sink in
// its steady state holds one per day of retention (30 by default), and the
// planner's cost of a write grows with their number where it is not pruned.
func (e *env) keepDays(ctx context.Context, days int) error {
	st, err := store.Open(ctx, store.Options{URL: e.dsn})
	if err != nil {
		return fmt.Errorf("open the record: %w", err)
	}
	defer st.Close()
	var past []time.Time
	for i := 1; i <= days; i++ {
		past = append(past, time.Now().AddDate(0, 0, -i))
	}
	return st.EnsurePartitionsFor(ctx, past)
}

// waitSample counts what the database's client backends were doing when
// sampled inside a transaction: on CPU, waiting (by wait event type and
// name; Client:ClientRead is waiting for the sink's data), or idle between
// the statements of a transaction (the sink working between them).
type waitSample struct {
	samples int
	by      map[string]int
}

// String lists the states by share of the samples, largest first.
func (w waitSample) String() string {
	if w.samples == 0 {
		return ""
	}
	keys := slices.Collect(maps.Keys(w.by))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(w.by[b]-w.by[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys {
		if pct := 100 * w.by[k] / w.samples; pct >= 1 {
			parts = append(parts, fmt.Sprintf("%s %d%%", k, pct))
		}
	}
	return strings.Join(parts, ", ")
}

// sampleWaits samples pg_stat_activity every 100 ms until the returned
// function is called, which returns the counts: where the backends that
// serve the sink spend their time (CPU, WAL flushes, waiting for the client).
func (e *env) sampleWaits(ctx context.Context) func() waitSample {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan waitSample, 1)
	go func() {
		w := waitSample{by: map[string]int{}}
		defer func() { done <- w }()
		conn, err := pgx.Connect(ctx, e.dsn)
		if err != nil {
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' || wait_event, 'CPU')
                 ELSE 'idle in transaction' END
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND state IN ('active', 'idle in transaction') AND pid <> pg_backend_pid()`)
			if err != nil {
				return
			}
			states, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			for _, s := range states {
				w.by[s]++
				w.samples++
			}
		}
	}()
	return func() waitSample {
		cancel()
		return <-done
	}
}

// analyze gathers planner statistics on the record's tables.
func (e *env) analyze(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "ANALYZE events, object_versions"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// walLSN is the current WAL insert position, in bytes.
func (e *env) walLSN(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").Scan(&n); err != nil {
		return 0, fmt.Errorf("wal position: %w", err)
	}
	return n, nil
}

// storage is the size of the record.
type storage struct {
	events, versions         int64
	eventBytes, versionBytes int64
	partitions               int
	// Sequential scans of the record (whole run): the write path's lookups
	// should use the indexes, so these should stay near zero.
	eventSeqScans, eventSeqRows     int64
	versionSeqScans, versionSeqRows int64
	// parts are where the bytes are: each table's heap and TOAST, each
	// index (the events partitions summed per index), and the average
	// stored width of the largest columns.
	parts []storagePart
	// The tamper-evident log, when the sink keeps one: its tables' bytes
	// (once the integrator has drained what the window wrote) and the lag
	// from a batch's commit to its integration.
	logged                 bool
	logBytes               int64 // log_segments and its lookup aids (log_leaf_index, log_version_seconds)
	pendingBytes           int64 // log_pending and log_pending_batches, empty but not vacuumed: their peak backlog
	lagP50, lagP99, lagMax time.Duration
}

// storagePart is the size of one part of the record.
type storagePart struct {
	name  string
	bytes int64
}

// hasTamperLog says whether a sink build keeps the tamper-evident log
// (an older build, compared with -compare, does not).
func hasTamperLog(bin string) bool {
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	return strings.Contains(string(out), "--log-signing-key-file")
}

func (e *env) storage(ctx context.Context) (storage, error) {
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		return storage{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s, err := e.waitIntegrated(ctx, conn)
	if err != nil {
		return s, err
	}
	// The statistics collector is fed by the backends within about a second.
	// Read before the counts below and the log's lag, whose own scans (the
	// lag joins every event) are not the sink's.
	time.Sleep(1500 * time.Millisecond)
	err = conn.QueryRow(ctx, `
SELECT coalesce(sum(seq_scan) FILTER (WHERE relid <> 'object_versions'::regclass), 0)::bigint,
       coalesce(sum(seq_tup_read) FILTER (WHERE relid <> 'object_versions'::regclass), 0)::bigint,
       coalesce(sum(seq_scan) FILTER (WHERE relid = 'object_versions'::regclass), 0)::bigint,
       coalesce(sum(seq_tup_read) FILTER (WHERE relid = 'object_versions'::regclass), 0)::bigint
FROM pg_stat_user_tables
WHERE relid = 'object_versions'::regclass
   OR relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)`).Scan(
		&s.eventSeqScans, &s.eventSeqRows, &s.versionSeqScans, &s.versionSeqRows)
	if err != nil {
		return s, fmt.Errorf("table statistics: %w", err)
	}
	if err := e.logStorage(ctx, conn, &s); err != nil {
		return s, err
	}
	err = conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM events),
       (SELECT count(*) FROM object_versions),
       (SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits WHERE inhparent = 'events'::regclass),
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass),
       pg_total_relation_size('object_versions')`).Scan(&s.events, &s.versions, &s.eventBytes, &s.partitions, &s.versionBytes)
	if err != nil {
		return s, fmt.Errorf("storage: %w", err)
	}
	rows, err := conn.Query(ctx, `
WITH rels AS (
    SELECT c.oid, CASE WHEN i.inhrelid IS NOT NULL THEN 'events' ELSE c.relname END AS tbl
    FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'events'::regclass
    WHERE c.oid = 'object_versions'::regclass OR i.inhrelid IS NOT NULL
)
SELECT tbl || ' heap', sum(pg_relation_size(oid))::bigint FROM rels GROUP BY tbl
UNION ALL
SELECT tbl || ' TOAST', sum(pg_total_relation_size(reltoastrelid))::bigint
FROM rels JOIN pg_class c USING (oid) WHERE reltoastrelid <> 0 GROUP BY tbl
UNION ALL
SELECT 'index ' || coalesce(p.relname, x.relname), sum(pg_relation_size(x.oid))::bigint
FROM rels r JOIN pg_index ix ON ix.indrelid = r.oid JOIN pg_class x ON x.oid = ix.indexrelid
LEFT JOIN pg_inherits pi ON pi.inhrelid = x.oid LEFT JOIN pg_class p ON p.oid = pi.inhparent
GROUP BY 1
UNION ALL
SELECT 'width object_versions.object', coalesce(avg(pg_column_size(object)), 0)::bigint * count(*) FROM object_versions
UNION ALL
SELECT 'width events.request_object', coalesce(sum(pg_column_size(request_object)), 0)::bigint FROM events
ORDER BY 2 DESC`)
	if err != nil {
		return s, fmt.Errorf("storage parts: %w", err)
	}
	if s.parts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (storagePart, error) {
		var p storagePart
		return p, r.Scan(&p.name, &p.bytes)
	}); err != nil {
		return s, fmt.Errorf("storage parts: %w", err)
	}
	return s, nil
}

// sinkMetrics are counters scraped from the sink's /metrics.
type sinkMetrics struct {
	received, kept float64
	dropped        map[string]float64 // by reason
	batches        map[string]float64 // by outcome
}

func (e *env) scrape() (sinkMetrics, error) {
	m := sinkMetrics{dropped: map[string]float64{}, batches: map[string]float64{}}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(e.metrics + "/metrics")
	if err != nil {
		return m, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return m, fmt.Errorf("scrape metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("scrape metrics: %s", resp.Status)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(line[:i], "{")
		switch name {
		case "options_record_events_received_total":
			m.received += v
		case "options_record_events_kept_total":
			m.kept += v
		case "options_record_events_dropped_total":
			m.dropped[label(labels, "reason")] += v
		case "options_record_batches_total":
			m.batches[label(labels, "outcome")] += v
		}
	}
	return m, nil
}

// label extracts one label's value from `a="x",b="y"}`.
func label(labels, name string) string {
	for part := range strings.SplitSeq(strings.TrimSuffix(labels, "}"), ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == name {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
	}
	return ""
}

var errInterrupted = errors.New("interrupted")

// waitIntegrated says whether the sink has the tamper-evident log, and
// then waits (up to a minute) for its integrator to drain the pending rows.
func (e *env) waitIntegrated(ctx context.Context, conn *pgx.Conn) (storage, error) {
	var s storage
	if err := conn.QueryRow(ctx, "SELECT to_regclass('log_segments') IS NOT NULL AND EXISTS (SELECT 1 FROM log_segments)").Scan(&s.logged); err != nil || !s.logged {
		return s, err
	}
	for range 600 {
		var pending int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM log_pending_rows").Scan(&pending); err != nil {
			return s, fmt.Errorf("log_pending_rows: %w", err)
		}
		if pending == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s, nil
}

// logStorage reads the tamper-evident log's size and integration lag
// (when the sink has the log) into s.
func (e *env) logStorage(ctx context.Context, conn *pgx.Conn, s *storage) error {
	if !s.logged {
		return nil
	}
	// Joined by hash: the record has no statistics yet, and a nested loop
	// over the partitions' indexes takes minutes.
	if _, err := conn.Exec(ctx, "SET enable_nestloop = off"); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET enable_nestloop") }()
	var p50, p99, pmax float64
	err := conn.QueryRow(ctx, `
SELECT pg_total_relation_size('log_segments') + coalesce(pg_total_relation_size(to_regclass('log_leaf_index')), 0)
         + coalesce(pg_total_relation_size(to_regclass('log_version_seconds')), 0),
       pg_total_relation_size('log_pending') + pg_total_relation_size('log_pending_batches'),
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), 0), coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), 0),
       coalesce(max(lag), 0)
FROM (SELECT extract(epoch FROM l.integrated_at - e.ingested_at)::float8 AS lag
      FROM log_leaves l JOIN events e ON e.cluster = l.cluster AND e.event_key = l.key AND e.stage_at = l.at
      WHERE l.row_table = 'events') x`).Scan(&s.logBytes, &s.pendingBytes, &p50, &p99, &pmax)
	if err != nil {
		return fmt.Errorf("tamper log storage: %w", err)
	}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	s.lagP50, s.lagP99, s.lagMax = sec(p50), sec(p99), sec(pmax)
	return nil
}
