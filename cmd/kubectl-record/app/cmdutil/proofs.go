package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// ProofSuffix ends the name of a proof file: options-record verify
// --proof FILE.tlog-proof also checks FILE.json beside it, when there is
// one, against the state the proof carries.
const ProofSuffix = ".tlog-proof"

// ErrNotLogged is Proof's error for a version that is not in the
// tamper-evident log yet (it is appended within seconds of being stored).
var ErrNotLogged = errors.New("not in the tamper-evident log yet")

// ErrBeforeLog is Proof's error for a version stored before the record
// kept its tamper-evident log: the log does not hold it and never will.
var ErrBeforeLog = errors.New("stored before the record kept its tamper-evident log")

// notLogged is ErrNotLogged (or ErrBeforeLog) with the server's words.
type notLogged struct {
	msg   string
	cause error
}

func (e notLogged) Error() string        { return e.msg }
func (e notLogged) Is(target error) bool { return target == e.cause }

// Proof returns the inclusion proof of the change named name (of namespace
// ns; "" a cluster-scoped object's clusterchange) in its cluster's
// tamper-evident log: the text of a C2SP tlog-proof, as the record API
// answers it to the caller (authorized as reading the change). A version
// not in the log yet is ErrNotLogged, one stored before the record kept
// its log ErrBeforeLog; a record that keeps no log is an
// error that says so (exit code 4), as is a version the caller may not
// read.
func (f *Factory) Proof(ctx context.Context, ns, name string) ([]byte, error) {
	rc, err := f.Record()
	if err != nil {
		return nil, err
	}
	req := rc.RESTClient().Get()
	what := "get the proof of version " + name
	if ns != "" {
		req, what = req.Namespace(ns).Resource("changes"), what+" in namespace "+ns
	} else {
		req = req.Resource("clusterchanges")
	}
	// Do, not DoRaw: DoRaw does not decode an error's Status, whose
	// causes tell a version not in the log from a record without one.
	res := req.Name(name).SubResource(record.ProofSubresource).Do(ctx)
	err = res.Error()
	b, _ := res.Raw()
	var st apierrors.APIStatus
	if err != nil && errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			switch c.Type {
			case record.CauseNotLogged:
				return nil, notLogged{format.Cell(c.Message), ErrNotLogged}
			case record.CauseBeforeLog:
				return nil, notLogged{format.Cell(c.Message), ErrBeforeLog}
			case record.CauseNoLog:
				return nil, &codedError{ExitNotFound, fmt.Errorf("no proofs: the record keeps no tamper-evident log of this cluster; "+
					"its operator enables one with serve --log-signing-key-file (docs/security.md) (%s)", format.Cell(c.Message))}
			}
		}
	}
	if err != nil {
		return nil, Explain(err, what)
	}
	if !bytes.HasPrefix(b, []byte(record.ProofHeader+"\n")) {
		return nil, fmt.Errorf("%s: the answer is not a proof (%d bytes not beginning with %s)", what, len(b), record.ProofHeader)
	}
	return b, nil
}

// WriteNewFile writes data to a new file name of root, 0600: never over
// a file (O_EXCL), never through a link (root); a file cut short is
// removed.
func WriteNewFile(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: the plugin never overwrites a file (use an empty directory)", format.Cell(name))
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(name)
	}
	return err
}
