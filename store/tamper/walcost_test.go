package tamper

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLogWALCost prints the WAL the log writes per kept event (an event
// and its version), by relation: what the batches write to
// log_pending_batches (a row per batch, its packed references TOASTed), and what a
// pass writes (the drain's deletes, the segment, the leaf index), read with pg_waldump over each step's range of the WAL. A
// measure, not a check (docs/benchmarks.md, "The tamper-evident log"):
// go test -count=1 ./store/tamper -run TestLogWALCost -v
func TestLogWALCost(t *testing.T) {
	waldump := "/usr/lib/postgresql/15/bin/pg_waldump"
	if _, err := os.Stat(waldump); err != nil {
		t.Skipf("no pg_waldump: %v", err)
	}
	e := newEnv(t)
	e.in.o.MaxLeaves = 10000
	ctx := context.Background()
	var dataDir string
	if err := e.st.Pool().QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Skipf("no data directory (not a superuser?): %v", err)
	}
	lsn := func() string {
		var s string
		if err := e.st.Pool().QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Batches like the bench's: 400 events a batch, ten a pass.
	const batches, perBatch = 10, 400
	now := time.Now().Add(-time.Hour)
	round := func() (write, pass map[string]int) {
		a := lsn()
		for i := range batches {
			b := e.batch("default", now.Add(time.Duration(i)*time.Second), perBatch)
			for j := range b.Versions { // a Kubernetes uid, as the bench's (the hostile ones are longer)
				uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, j+len(b.Versions)*e.seq)
				b.Versions[j].UID, b.Events[j].ObjectUID = uid, uid
			}
			e.write(b)
		}
		b := lsn()
		e.integrate()
		c := lsn()
		e.exec("SELECT pg_switch_wal()") // pg_waldump reads only whole files reliably
		names := relNames(t, e)
		return walByRelation(t, waldump, dataDir, a, b, names), walByRelation(t, waldump, dataDir, b, c, names)
	}
	round() // warm up: the first pages' full-page images
	write, pass := round()
	kept := float64(batches * perBatch)
	print := func(step string, m map[string]int) {
		total := 0
		for _, k := range slices.Sorted(maps.Keys(m)) {
			total += m[k]
			t.Logf("%-6s %-40s %8.1f B per kept event", step, k, float64(m[k])/kept)
		}
		t.Logf("%-6s %-40s %8.1f B per kept event", step, "total", float64(total)/kept)
	}
	print("batch", write)
	print("pass", pass)
}

// relNames maps relfilenodes to the names of their relations (a TOAST
// table or its index by its table's name).
func relNames(t *testing.T, e *env) map[string]string {
	rows, err := e.st.Pool().Query(context.Background(), `
SELECT c.relfilenode::text, CASE WHEN n.nspname = 'pg_toast' THEN coalesce(
    (SELECT o.relname FROM pg_class o WHERE o.reltoastrelid = c.oid),
    (SELECT o.relname FROM pg_class o JOIN pg_index i ON i.indrelid = o.reltoastrelid WHERE i.indexrelid = c.oid)) || ' TOAST'
  ELSE c.relname END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relfilenode <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var node, name string
	if _, err := pgx.ForEachRow(rows, []any{&node, &name}, func() error { out[node] = name; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	walRecord = regexp.MustCompile(`len \(rec/tot\):\s*\d+/\s*(\d+),`)
	walRel    = regexp.MustCompile(`blkref #0: rel \d+/\d+/(\d+)`)
	partition = regexp.MustCompile(`_p\d{8}`)
)

// walByRelation sums the WAL records' lengths from start to end by the
// relation of their first block (event partitions as "events").
func walByRelation(t *testing.T, waldump, dataDir, start, end string, names map[string]string) map[string]int {
	cmd := exec.Command(waldump, "-p", filepath.Join(dataDir, "pg_wal"), "-s", start, "-e", end)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil && out.Len() == 0 {
		t.Fatalf("pg_waldump: %v: %s", err, errb.String())
	}
	m := map[string]int{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		r := walRecord.FindStringSubmatch(line)
		if r == nil {
			continue
		}
		n, _ := strconv.Atoi(r[1])
		name := "(no relation: commits, ...)"
		if b := walRel.FindStringSubmatch(line); b != nil {
			name = names[b[1]]
			if name == "" {
				name = "relfilenode " + b[1]
			}
			name = partition.ReplaceAllString(name, "")
		}
		m[name] += n
	}
	return m
}
