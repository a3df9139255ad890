package tamper

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// advancesLatest reports whether a cluster's checkpoint of size may
// replace its latest in Checkpoints: latest only advances along the
// log. A latest of a larger tree (a replica that wrote a newer one into a
// shared directory before this slower one, or a log rolled back since) is
// kept, and so is one whose tree the database's log does not extend (a
// log rewritten since): latest is the evidence verify holds the log to.
// A latest that is no checkpoint of this log (unreadable, another origin)
// is replaced. When the database cannot tell, or latest cannot be read
// (the ingest's identity may not read the bucket: docs/security.md),
// latest waits for the next.
func (in *Integrator) advancesLatest(ctx context.Context, cluster string, size int64) bool {
	cur, err := ReadTrusted(ctx, in.o.Checkpoints, cluster)
	if err != nil {
		in.reportOnce(cluster, size, "unreadable", func() {
			in.o.Logger.Error("latest checkpoint cannot be read: kept (the ingest needs to read the checkpoints)",
				"cluster", cluster, "size", size, "err", err)
		})
		return false
	}
	text, _, ok := bytes.Cut(cur, []byte("\n\n"))
	if cur == nil || !ok {
		return true
	}
	c, err := ParseCheckpoint(string(text) + "\n")
	if err != nil || c.Origin != Origin(in.o.Signer.Name(), cluster) {
		return true
	}
	if c.Size > size {
		in.reportOnce(cluster, c.Size, "larger", func() {
			in.o.Logger.Warn("latest checkpoint is of a larger tree: kept (another replica's, or the log was rolled back)",
				"cluster", cluster, "latest", c.Size, "size", size)
		})
		return false
	}
	if c.Size == 0 {
		return true
	}
	var root tlog.Hash
	err = pgx.BeginTxFunc(ctx, in.o.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		root, err = tlog.TreeHash(c.Size, &storedHashes{ctx: ctx, q: tx, cluster: cluster, mem: map[int64]tlog.Hash{}})
		return err
	})
	if err != nil {
		in.o.Logger.Error("latest checkpoint: the log's tree hash", "cluster", cluster, "latest", c.Size,
			"err", fmt.Errorf("tree hash of size %d: %w", c.Size, err))
		return false
	}
	if root != c.Root {
		in.reportOnce(cluster, c.Size, "rewritten", func() {
			in.o.Logger.Error("latest checkpoint: the log does not extend it (rewritten since): kept",
				"cluster", cluster, "latest", c.Size, "size", size)
		})
		return false
	}
	return true
}

// reportOnce runs report once for a cluster's latest of size and a
// reason: a kept latest is checked on every pass.
func (in *Integrator) reportOnce(cluster string, size int64, reason string, report func()) {
	id := fmt.Sprintf("latest\x00%s\x00%d\x00%s", cluster, size, reason)
	in.mu.Lock()
	seen := in.reported[id]
	if !seen {
		if len(in.reported) >= 10000 {
			clear(in.reported)
		}
		in.reported[id] = true
	}
	in.mu.Unlock()
	if !seen {
		report()
	}
}
