package store

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// gatedPool is the pool as the Store's methods reach it: until prepared is
// set (by Prepare, or at once for a Secondary store) every statement fails
// with ErrNotPrepared and nothing reaches the database. It has only the
// methods the store uses, so a new kind of call cannot pass the gate
// unnoticed; Prepare, Ping and Close use raw.
type gatedPool struct {
	raw      *pgxpool.Pool
	prepared atomic.Bool
}

func (p *gatedPool) check() error {
	if !p.prepared.Load() {
		return ErrNotPrepared
	}
	return nil
}

func (p *gatedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.raw.Query(ctx, sql, args...)
}

func (p *gatedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := p.check(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return p.raw.Exec(ctx, sql, args...)
}

// Begin makes gatedPool usable with pgx.BeginFunc.
func (p *gatedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.raw.Begin(ctx)
}

func (p *gatedPool) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.raw.Acquire(ctx)
}
