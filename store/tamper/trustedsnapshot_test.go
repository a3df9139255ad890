package tamper

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// hook runs f once, when a query whose SQL contains match ends.
type hook struct {
	match string
	once  sync.Once
	f     func()
}

type sqlKey struct{}

func (h *hook) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}
func (h *hook) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, _ := ctx.Value(sqlKey{}).(string); strings.Contains(s, h.match) {
		h.once.Do(h.f)
	}
}

// TestVerifyTrustedReadBeforeSnapshot: an integration pass that commits (and
// writes latest) while a full verify scans the log: the record is intact,
// the log only grew: verify passes (it read the trusted checkpoint
// before its snapshot; read after, it reported the log rolled back).
func TestVerifyTrustedReadBeforeSnapshot(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now().Add(-time.Minute), 10))
	e.integrate()
	if rep := e.verify(true); !rep.OK() {
		t.Fatalf("before: %s", problems(rep))
	}
	cfg, err := pgxpool.ParseConfig(e.url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = &hook{match: "FROM log_segments WHERE cluster = $1 AND tree_size > $2", f: func() {
		e.write(e.batch("default", time.Now(), 3)) // an ingest and a pass, as serve runs them
		e.integrate()
	}}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rep, err := Verify(context.Background(), pool, VerifyOptions{Verifier: e.verifier, Trusted: e.bucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("during: %+v", rep.Clusters)
	if !rep.OK() {
		t.Errorf("an intact record that grew during the verify fails:\n%s", problems(rep))
	}
	if rep := e.verify(true); !rep.OK() {
		t.Fatalf("after: %s", problems(rep))
	}
}
