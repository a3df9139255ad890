package history

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
)

// TestProofsOfVersionsStoredBeforeTheLog: history --proof writes the
// proofs there are; a version stored before the record kept its log is
// listed once, as never in the log (not "try again"), and does not fail
// the command; a version not in the log yet still does.
func TestProofsOfVersionsStoredBeforeTheLog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(path.Dir(r.URL.Path))
		cause, msg := record.CauseBeforeLog, "the version was stored before the record kept its tamper-evident log"
		switch name {
		case "logged":
			w.Header().Set("Content-Type", record.ProofContentType)
			_, _ = w.Write([]byte(record.ProofHeader + "\nextra AQA=\nindex 0\n\nsigned\n"))
			return
		case "pending":
			cause, msg = record.CauseNotLogged, "the version is not in the tamper-evident log (yet)"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: msg,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: cause, Message: msg}}}})
	}))
	defer srv.Close()
	run := func(names ...string) (error, string, string) {
		var errOut bytes.Buffer
		f := cmdutil.NewFactory(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut})
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse([]string{"--record-server", srv.URL, "--record-token", "t0ken"}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "proofs")
		h := &options{Factory: f, proofDir: dir}
		recs := make([]record.ChangeRecord, len(names))
		metas := make([]metav1.ObjectMeta, len(names))
		for i, n := range names {
			metas[i] = metav1.ObjectMeta{Namespace: "shop", Name: n}
		}
		err := h.writeProofs(context.Background(), "shop", recs, metas)
		return err, errOut.String(), dir
	}
	err, errOut, dir := run("logged", "old1", "old2")
	if err != nil || strings.Count(errOut, "stored before the record kept its tamper-evident log") != 3 ||
		!strings.Contains(errOut, "no proof of old1: ") || !strings.Contains(errOut, "2 versions were stored before") {
		t.Errorf("proofs of a logged version and two stored before the log: %v\n%s", err, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files written: %v, want the one proof", entries)
	}
	if err, errOut, _ := run("old1", "pending"); err == nil || !strings.Contains(err.Error(), "try again") {
		t.Errorf("a version not in the log yet: %v\n%s", err, errOut)
	}
}
