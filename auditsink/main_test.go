package auditsink_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is a pipeline over a fresh real database.
type env struct {
	t    *testing.T
	st   *store.Store
	pipe *auditsink.Pipeline
	pool *pgxpool.Pool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	rules := testRules(t)
	dg, err := model.NewSecretDigester([]byte(testDigestKey))
	if err != nil {
		t.Fatal(err)
	}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, nil, nil).WithSecretDigester(dg)
	return &env{t: t, st: st, pool: st.Pool(), pipe: pipe}
}

// testRules are the rules of testdata/rules.yaml.
func testRules(t *testing.T) *filter.Rules {
	t.Helper()
	objs, err := filter.LoadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatalf("load rules: %v", err)
	}
	rules, statuses := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	for _, s := range statuses {
		if !s.Ready {
			t.Fatalf("rule %s/%s not ready: %s", s.Namespace, s.Name, s.Message)
		}
	}
	return rules
}

// testDigestKey is the secret digest key of the test pipelines.
const testDigestKey = "options-record-test-digest-key"

// send processes events as one batch of cluster "default".
func (e *env) send(evs ...*auditv1.Event) auditsink.Outcome {
	e.t.Helper()
	batch := make([]auditv1.Event, len(evs))
	for i := range evs {
		batch[i] = *evs[i]
	}
	out, err := e.pipe.Process(context.Background(), "default", batch, nil)
	if err != nil {
		e.t.Fatalf("process: %v", err)
	}
	return out
}

// change is a row of object_history, as the tests compare it.
type change struct {
	Verb                 string
	Username             string
	ImpersonatedUser     *string
	Namespace, Name, UID string
	ResourceVersion      *int64
	PriorKnown           bool
	PriorObject          map[string]any
	Object               map[string]any
	PriorStale           bool
	Deleted              bool
	Rules                []string
	SecretDigested       bool
	RequestObject        any
	ChangedAt            time.Time
}

const historySQL = `
SELECT verb, username, impersonated_user, namespace, name, uid, resource_version, prior_known,
       prior_object, object, prior_stale, deleted, rules, secret_digested, request_object, changed_at
FROM object_history
WHERE cluster = 'default' AND namespace = $1 AND name = $2
ORDER BY changed_at, resource_version NULLS LAST`

func (e *env) history(ns, name string) []change {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), historySQL, ns, name)
	if err != nil {
		e.t.Fatalf("query history: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[change])
	if err != nil {
		e.t.Fatalf("collect history: %v", err)
	}
	return out
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("count %q: %v", sql, err)
	}
	return n
}

// data returns obj.data (for ConfigMaps and Secrets).
func data(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	d, _ := obj["data"].(map[string]any)
	return d
}
