package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Checkpoints returns where a pulled source (source, consumer group,
// topic) stored up to: the offset of the next record to read, by
// partition. A partition never stored has none.
func (s *Store) Checkpoints(ctx context.Context, source, group, topic string) (map[int32]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT partition, next_offset FROM source_checkpoints
		WHERE source = $1 AND consumer_group = $2 AND topic = $3`, source, group, topic)
	if err != nil {
		return nil, fmt.Errorf("store: checkpoints: %w", err)
	}
	out := map[int32]int64{}
	var p int32
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &off}, func() error { out[p] = off; return nil }); err != nil {
		return nil, fmt.Errorf("store: checkpoints: %w", err)
	}
	return out, nil
}

// commitCheckpointsSQL never moves a checkpoint back: a replica that lost
// a partition and commits late cannot undo the newer owner's progress.
const commitCheckpointsSQL = `
INSERT INTO source_checkpoints AS c (source, consumer_group, topic, partition, next_offset, updated_at)
SELECT $1, $2, $3, p, o, now() FROM unnest($4::integer[], $5::bigint[]) AS x(p, o)
ON CONFLICT (source, consumer_group, topic, partition) DO UPDATE
SET next_offset = greatest(c.next_offset, excluded.next_offset), updated_at = now()`

// CommitCheckpoints records that the records of each partition before its
// offset are stored.
func (s *Store) CommitCheckpoints(ctx context.Context, source, group, topic string, next map[int32]int64) error {
	if len(next) == 0 {
		return nil
	}
	ps := make([]int32, 0, len(next))
	offs := make([]int64, 0, len(next))
	for p, o := range next {
		ps, offs = append(ps, p), append(offs, o)
	}
	if _, err := s.pool.Exec(ctx, commitCheckpointsSQL, source, group, topic, ps, offs); err != nil {
		return fmt.Errorf("store: commit checkpoints: %w", err)
	}
	return nil
}
