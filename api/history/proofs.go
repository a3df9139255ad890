package history

import (
	"context"
	"fmt"

	"github.com/options-record/options-record/api/errs"
)

// Proofs answers the inclusion proof (a C2SP tlog-proof, text) of a
// version in its cluster's tamper-evident log. It is called only once the
// caller was authorized to read the version, and reads no authorization of
// its own. A version not in the log yet wraps ErrNotLogged, one written
// around the ingest after the log began ErrNotInLog (an ErrNotLogged), one
// stored before the log ErrBeforeLog, a cluster without a log ErrNoLog.
type Proofs func(ctx context.Context, cluster, uid string, key []byte) ([]byte, error)

// ErrNotLogged is a Proofs function's error for a version that is not in
// the tamper-evident log yet: the integrator appends it within seconds of
// its batch.
var ErrNotLogged = fmt.Errorf("%w: the version is not in the tamper-evident log (yet: it is appended within seconds of being stored)", errs.ErrNotFound)

// ErrBeforeLog is a Proofs function's error for a version the ingest
// stored while it kept no tamper-evident log (before the log was enabled):
// the log does not hold it and never will.
var ErrBeforeLog = fmt.Errorf("%w: the version was stored before the record kept its tamper-evident log: the log does not hold it and never will", errs.ErrNotFound)

// ErrNotInLog is a Proofs function's error for a version that is not in
// the tamper-evident log and has no pending row, though it was stored
// after the log began: the ingest that keeps the log did not store it. It
// is an ErrNotLogged (errors.Is), so a caller that wants a proof fails.
var ErrNotInLog error = notInLog{}

type notInLog struct{}

func (notInLog) Error() string {
	return errs.ErrNotFound.Error() + ": the version is not in the tamper-evident log, though it was stored after the log began: " +
		"it was written around the ingest that keeps the log, or its leaf was removed (run options-record verify)"
}

func (notInLog) Is(target error) bool { return target == ErrNotLogged || target == errs.ErrNotFound }

// ErrNoLog is the error for a proof of a cluster whose record keeps no
// tamper-evident log (the ingest runs without --log-signing-key-file), or
// of an API started without proofs.
var ErrNoLog = fmt.Errorf("%w: the record keeps no tamper-evident log of this cluster (the ingest runs without --log-signing-key-file): there is no proof to give", errs.ErrNotFound)
