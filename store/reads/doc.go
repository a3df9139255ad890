// Package reads owns the queries that read the record: an object's
// versions and the state before a change (versions.go), the record as it
// was at a time (asof.go), deletions with the cascades they started
// (deletions.go), kept audit events (events.go), the authors attached to
// versions read apart from their events (actors.go), and the builder that
// assembles their SQL from constant fragments (query.go).
//
// They are the reader role's part of the store: package store embeds a
// Reader in its Store, on the Store's gated pool, so callers ask the Store
// and meet the types here under the names store gives them
// (store.VersionRecord, store.ChangeQuery, ...).
//
// It must never write, nor reach the database other than through the
// Querier it is given (the Store's pool answers ErrNotPrepared until the
// migrations are applied); values always travel as parameters, never in the
// SQL text.
package reads
