// Package jsonscan is the one JSON scanner of the record: wherever the ingest
// walks JSON text byte by byte (the EventList envelope, a streamed event
// held under its limit, a patch body read for noise, an object cut of its
// managedFields), it walks it with this package.
//
// It owns
//   - the extent of a value (Extent, Skip): where a string, an object or
//     array however deep, or a number or literal ends, found without a
//     nesting limit and without checking what the decoder checks later;
//     Extent takes the text a byte or a piece at a time, for a stream;
//   - strict scanning (Mode.Strict): the text must be JSON as encoding/json
//     takes it, within a nesting limit, for the callers that must not guess;
//   - walking the members of an object (Mode.Object, or Mode.Walk to go
//     into some values in the same pass) and the elements of an array
//     (Mode.Array) in order, and cutting members out of the text in place
//     (Mode.Drop, Cut).
//
// FuzzScan checks it against encoding/json. The package does no I/O and
// imports only the standard library (test/layering checks both): the
// callers read, copy and bound; it only says where things lie.
package jsonscan
