// Package pgarray holds one-dimensional array parameters that pgx encodes
// element by element through a pointer to each, with no allocation per
// element: an []string, [][]byte or []time.Time parameter makes pgx box
// each element in an interface (an allocation each, a time.Time another).
// The tamper-evident log sends arrays of thousands of elements a batch and
// a pass (store's pending batches, store/tamper's segments).
package pgarray
