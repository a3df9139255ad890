package reads

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/api/errs"
)

// ErrNotFound is returned by reads that find no row. It is an
// errs.ErrNotFound, so errs.Status answers it 404. Package store gives it
// as store.ErrNotFound.
var ErrNotFound = fmt.Errorf("store: %w", errs.ErrNotFound)

// Querier runs a read: the Store's gated pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Reader runs the record's reads on db.
type Reader struct {
	db Querier
}

// New returns a Reader that reads through db.
func New(db Querier) *Reader { return &Reader{db: db} }
