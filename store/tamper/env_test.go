package tamper

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/migrations"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// env is a record with a tamper-evident log: the store as the ingest
// writes it, an integrator with its key, and the verifier key.
type env struct {
	t        testing.TB
	url      string
	st       *store.Store
	in       *Integrator
	signer   note.Signer
	verifier note.Verifier
	dir      string       // the integrator's --checkpoint-dir
	bucket   *blob.Bucket // dir, as the integrator and verify open it
	seq      int
}

const keyName = "record.example/log"

func newKey(t testing.TB) (note.Signer, note.Verifier) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, keyName)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// dirBucket opens a checkpoint directory as cmd/options-record does for
// --checkpoint-dir: no attribute files beside the checkpoints, each
// written to a temporary file beside its name and renamed.
func dirBucket(t testing.TB, dir string) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{Metadata: fileblob.MetadataDontWrite, NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvAt(t, pgtest.NewDatabase(t))
}

// newEnvAt is newEnv on the database at url.
func newEnvAt(t testing.TB, url string) *env {
	t.Helper()
	e := &env{t: t, url: url, dir: t.TempDir()}
	e.bucket = dirBucket(t, e.dir)
	var err error
	e.st, err = store.Open(context.Background(), store.Options{URL: e.url, TamperLog: true, VersionDigest: VersionDigest, EventDigest: EventDigest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.st.Close)
	e.signer, e.verifier = newKey(t)
	e.in = e.integrator(e.signer)
	return e
}

func (e *env) integrator(s note.Signer) *Integrator {
	e.t.Helper()
	in, err := NewIntegrator(IntegratorOptions{Pool: e.st.Pool(), Signer: s, Checkpoints: e.bucket, MaxLeaves: 7})
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

// batch makes a batch of n events, each creating one object with a
// version, at the given time, with hostile strings in every field.
func (e *env) batch(cluster string, at time.Time, n int) *model.Batch {
	b := &model.Batch{}
	for range n {
		e.seq++
		s := hostile[e.seq%len(hostile)]
		key := sha256.Sum256(fmt.Append(nil, "event", e.seq))
		vkey := sha256.Sum256(fmt.Append(nil, "version", e.seq))
		obj := hostileJSON[e.seq%len(hostileJSON)]
		rv := int64(e.seq)
		when := at.Add(time.Duration(e.seq) * 1001 * time.Nanosecond) // below PostgreSQL's microsecond
		uid := fmt.Sprintf("uid-%d-%s", e.seq, s)
		b.Events = append(b.Events, model.Event{
			Cluster: cluster, Key: key[:], StageAt: when, ReceivedAt: when.Add(-time.Millisecond),
			AuditID: s, Stage: "ResponseComplete", Verb: "create", RequestURI: "/api/v1/namespaces/" + s,
			Username: s, UserUID: s, UserGroups: []string{s, "", "system:authenticated"},
			UserExtra: []byte(`{"z":["` + strconv.Itoa(e.seq) + `"],"a":[]}`), ImpersonatedGroups: nil,
			SourceIPs: []string{"10.0.0.1"}, UserAgent: s, Resource: "configmaps", Namespace: s, Name: "n-" + s,
			ObjectUID: uid, ResponseCode: 201, RequestObject: []byte(obj), Annotations: []byte(`{"b":"1","a":"` + strconv.Itoa(e.seq) + `"}`),
			Rules: []string{s},
		})
		b.Versions = append(b.Versions, model.Version{
			Cluster: cluster, UID: uid, Key: vkey[:], ResourceVersion: &rv, Origin: model.OriginChange,
			Verb: "create", ChangedAt: when, EventKey: key[:], APIVersion: "v1", Kind: "ConfigMap",
			Resource: "configmaps", Namespace: s, Name: "n-" + s, Created: true, Complete: true,
			Object: []byte(obj), ObjectExact: []byte(obj), Rules: []string{s, s},
		})
	}
	return b
}

func (e *env) write(b *model.Batch) {
	e.t.Helper()
	if _, err := e.st.WriteBatch(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) integrate() {
	e.t.Helper()
	if err := e.in.IntegrateAll(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) verify(trusted bool) Report {
	e.t.Helper()
	o := VerifyOptions{Verifier: e.verifier}
	if trusted {
		o.Trusted = e.bucket
	}
	rep, err := Verify(context.Background(), e.st.Pool(), o)
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.st.Pool().Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// explain is the plan PostgreSQL gives sql, one line each, run with
// options ("ANALYZE, BUFFERS").
func (e *env) explain(options, sql string, args ...any) []string {
	e.t.Helper()
	rows, err := e.st.Pool().Query(context.Background(), "EXPLAIN ("+options+") "+sql, args...)
	if err != nil {
		e.t.Fatalf("explain %s: %v", sql, err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatalf("explain %s: %v", sql, err)
	}
	return plan
}

// migrations is a goose provider of the record's migrations on e's
// database, to migrate it down and up.
func (e *env) migrations() *goose.Provider {
	e.t.Helper()
	cc, err := pgx.ParseConfig(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	e.t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// hostile are the strings of api/escape/testdata/hostile.txt that
// PostgreSQL stores as text (the model never hands it a NUL or invalid
// UTF-8: model.pgSafe).
var hostile = func() []string {
	f, err := os.Open("../../api/escape/testdata/hostile.txt")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := strconv.Unquote(strings.Split(line, "\t")[0])
		if err != nil {
			panic(fmt.Sprintf("hostile.txt: %q: %v", line, err))
		}
		if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
			out = append(out, s)
		}
	}
	return out
}()

// hostileJSON is JSON text whose exact form a json column keeps: key
// order, duplicate keys, spaces, escapes, numbers past float64, and each
// hostile string as a value.
var hostileJSON = func() []string {
	out := []string{
		`{"b":1,"a":2}`, `{"a":1,"a":2}`, " {\n\t\"x\" : [ ] } ", `{"n":1e400,"m":123456789012345678901234567890,"z":-0.0e-0}`,
		`{"s":"\u0000\ud83d\ude00\/"}`, `{"s":"\u202e"}`, `[]`, `null`, `"x"`,
	}
	for _, s := range hostile {
		b, _ := json.Marshal(map[string]string{s: s})
		out = append(out, string(b))
	}
	return out
}()

// withoutFiniteChecks drops migration 00031's constraints, so that a test
// plants rows at infinite times as they could be written before it (the
// constraints are NOT VALID: such rows stay).
func (e *env) withoutFiniteChecks() {
	e.t.Helper()
	e.exec("ALTER TABLE log_pending DROP CONSTRAINT log_pending_at_finite")
	e.exec("ALTER TABLE log_pending_batches DROP CONSTRAINT log_pending_batches_ats_finite")
}
