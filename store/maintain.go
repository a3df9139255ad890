package store

import (
	"context"
	"log/slog"
	"time"
)

// Maintain keeps partitions ahead of time and applies retention, hourly,
// until ctx ends. retention is asked each time, so rules added or changed
// since start-up count. rulesKnown is closed once the rules of every
// cluster are known (the shared ones loaded): before, the longest
// retention could be too short.
func (s *Store) Maintain(ctx context.Context, retention func() time.Duration, rulesKnown <-chan struct{}, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		r := retention()
		select {
		case <-rulesKnown:
		default:
			r = 0 // not yet: partitions only
		}
		s.MaintainOnce(ctx, time.Now(), r, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// MaintainOnce creates the coming partitions, builds what is missing of
// the index of failed events by key (BuildKeyIndex), and applies the retention of
// the rules in force. With no rule in force (none created yet, all deleted
// or invalid, the first LIST failed) nothing is deleted: the record is not
// given up because its rules are gone.
func (s *Store) MaintainOnce(ctx context.Context, now time.Time, retention time.Duration, log *slog.Logger) {
	if err := s.EnsurePartitionsAround(ctx, now); err != nil {
		log.Error("partition maintenance", "err", err)
	}
	// Until it is complete, the index of failed events by key (short names
	// of attempts) is built a partition at a time, without blocking writes.
	if done, err := s.BuildKeyIndex(ctx); err != nil {
		log.Error("index of failed events by key: stopped, continued at the next upkeep", "err", err)
	} else if !done {
		log.Info("index of failed events by key: another replica is building it")
	}
	if retention <= 0 {
		log.Warn("retention not applied: no OptionsRecordController in force says how long to keep the record (or the rules the replicas shared are not loaded yet)")
		return
	}
	if res, err := s.ApplyRetention(ctx, now, retention); err != nil {
		log.Error("retention", "err", err)
	} else if len(res.DroppedPartitions) > 0 || res.DeletedVersions > 0 {
		log.Info("retention applied", "retention", retention, "dropped_partitions", res.DroppedPartitions, "deleted_versions", res.DeletedVersions)
	}
}

// KeepExpiringRestores deletes, at start and then every interval until ctx
// ends, the restores and plans made before the record's retention cutoff,
// which the ingest role's retention pass records (read through record),
// and never one made within keep (the API's own longest retention,
// --max-retention): a cutoff the ingest role sets to infinity does not
// erase the restore log. They go with the record, and only the API's role
// writes them. Every replica runs it; the deletes are bounded and
// idempotent.
func (a *APIStore) KeepExpiringRestores(ctx context.Context, record *Store, keep, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := a.ExpireRestores(ctx, record, time.Now().Add(-keep)); err != nil {
			if ctx.Err() == nil {
				log.Error("expire restores and plans", "err", err)
			}
		} else if n > 0 {
			log.Info("restores and plans expired with the record", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
