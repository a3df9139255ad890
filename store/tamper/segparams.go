package tamper

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// insertSegment runs insertSegmentSQL with args, a pass's segment, under
// a generic plan: the store plans every statement of its connections for
// its parameters (plan_cache_mode force_custom_plan, store.Open), which
// for this INSERT copies its arrays of up to MaxLeaves elements into the
// plan each pass (eval_const_expressions, copyObject) to plan a Result
// node that no value changes. plan_cache_mode is set for the INSERT alone
// (SET LOCAL, then back to the connection's, TO DEFAULT), in the one
// round trip of a pipeline; pgx prepares the INSERT once a connection.
// Its arrays are store/pgarray's, whose binary encoding pgarray.Register
// makes cheap on the store's connections.
//
// A test sets it to the statement and encoding of before (TestSegmentBytes).
var insertSegment = func(ctx context.Context, tx pgx.Tx, args ...any) error {
	var b pgx.Batch
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	b.Queue(insertSegmentSQL, args...)
	b.Queue("SET LOCAL plan_cache_mode TO DEFAULT")
	return tx.SendBatch(ctx, &b).Close()
}
