// Package model is the record's model: what a kept audit event or a listed
// object becomes in the database, independent of how it arrived.
//
// It owns
//   - the row types (rows.go): an event, an object version, the batch one
//     webhook request stores, and the Writer that stores it;
//   - the conversion of a kept audit event into rows (convert.go): the
//     event's actor and request, each version it reveals (a write's answer,
//     a deletion, every item of a deletecollection, typed from its List),
//     and the skips it counts;
//   - baselines (baseline.go): a LISTed object as a known state that gives
//     the first recorded change after it a prior state;
//   - Secret digests (redact.go): keyed HMAC digests bound to the Secret's
//     place, the digest prefixes the restore paths refuse, and the derived
//     keys other parts (the restore API's cursors) take from the same key;
//   - the PostgreSQL-safe sanitizing (pgsafe.go) of values PostgreSQL cannot
//     store or read as jsonb, and the caps on indexed values.
//
// Ingest (package auditsink), rule sync (package filter/rulesync), the store
// and the restore paths import it. It is pure: it imports no other package of
// the module, never reads the database and never talks to the cluster
// (test/layering checks this on its transitive imports).
package model
