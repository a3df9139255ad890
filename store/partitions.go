package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/partitions"
)

// ErrPartitionTaken is the name of a day's partition of events taken by a
// relation that is not one (made by another role that may create in the
// schema public). The day's events cannot be stored until an administrator
// drops it; it is the database's state, not the events' fault: retryable,
// never a reason to drop them.
var ErrPartitionTaken = partitions.ErrTaken

// ErrNoPartition is a batch PostgreSQL found no partition of events for,
// after the store made its days' partitions: the database's state, not the
// events' fault (retryable, never invalid data).
var ErrNoPartition = errors.New("store: no partition of events for the batch")

// EnsurePartitionsAround creates the partitions from yesterday to
// PartitionsAhead days after now. The sink calls it at start and daily.
// Each day is made on its own: a day that cannot be made (ErrPartitionTaken)
// is logged, counted and returned, and the others are made; the next call
// tries it again.
func (s *Store) EnsurePartitionsAround(ctx context.Context, now time.Time) error {
	return s.parts.Ensure(ctx, s.pool, s.parts.Around(now), time.Time{})
}

// EnsurePartitionsFor creates the event partitions of the days of times
// that do not exist yet. WriteBatch calls it for the days of its events.
func (s *Store) EnsurePartitionsFor(ctx context.Context, times []time.Time) error {
	return s.parts.Ensure(ctx, s.pool, times, time.Time{})
}

// BuildKeyIndex finishes the index of failed events by key that resolves
// attempts' short names (partitions.BuildKeyIndex): each partition's index
// built CONCURRENTLY and attached, on a session of its own without a
// statement timeout. It reports whether the index is complete (valid);
// false and no error when another replica is building it.
func (s *Store) BuildKeyIndex(ctx context.Context) (bool, error) {
	return s.buildKeyIndex(ctx, nil)
}

func (s *Store) buildKeyIndex(ctx context.Context, step partitions.KeyIndexStep) (bool, error) {
	cc := s.conn.Copy()
	cc.RuntimeParams["statement_timeout"] = "0"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("store: build %s: connect: %w", partitions.KeyIndex, err)
	}
	// Closing the session also ends its advisory lock, whatever happened.
	defer conn.Close(context.WithoutCancel(ctx))
	return partitions.BuildKeyIndex(ctx, conn, s.log, step)
}
