package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestProofAnswers: Proof reads changes/NAME/proof (clusterchanges for a
// cluster-scoped object's) and tells the record API's answers apart: a
// proof, a version not in the log yet (ErrNotLogged), a record without a
// log (exit 4, saying so), a version not found, and a body that is not a
// proof, which is never taken as one.
func TestProofAnswers(t *testing.T) {
	status := func(w http.ResponseWriter, cause metav1.CauseType, msg string) {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 404,
			Reason: metav1.StatusReasonNotFound, Message: msg, Details: &metav1.StatusDetails{Name: "x", Kind: "changes"}}
		if cause != "" {
			st.Details.Causes = []metav1.StatusCause{{Type: cause, Message: msg}}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		_ = json.NewEncoder(w).Encode(st)
	}
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		switch {
		case strings.HasSuffix(r.URL.Path, "/logged/proof"):
			w.Header().Set("Content-Type", record.ProofContentType)
			_, _ = w.Write([]byte(record.ProofHeader + "\nextra AA==\nindex 0\n\nsigned\n"))
		case strings.HasSuffix(r.URL.Path, "/pending/proof"):
			status(w, record.CauseNotLogged, "the version is not in the tamper-evident log (yet)")
		case strings.HasSuffix(r.URL.Path, "/before/proof"):
			status(w, record.CauseBeforeLog, "the version was stored before the record kept its tamper-evident log")
		case strings.HasSuffix(r.URL.Path, "/nolog/proof"):
			status(w, record.CauseNoLog, "the record keeps no tamper-evident log of this cluster")
		case strings.HasSuffix(r.URL.Path, "/html/proof"):
			_, _ = w.Write([]byte("<html>a proxy's page</html>"))
		default:
			status(w, "", "not found")
		}
	}))
	defer srv.Close()
	f := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	f.recordServer, f.recordToken = srv.URL, "t0ken"
	ctx := context.Background()

	p, err := f.Proof(ctx, "shop", "logged")
	if err != nil || !strings.HasPrefix(string(p), record.ProofHeader+"\n") {
		t.Errorf("a proof: %q %v", p, err)
	}
	if _, err := f.Proof(ctx, "", "logged"); err != nil {
		t.Errorf("a cluster-scoped object's proof: %v", err)
	}
	if _, err := f.Proof(ctx, "shop", "pending"); !errors.Is(err, ErrNotLogged) || ExitCode(err) != ExitError {
		t.Errorf("a version not in the log yet: %v", err)
	}
	if _, err := f.Proof(ctx, "shop", "before"); !errors.Is(err, ErrBeforeLog) || errors.Is(err, ErrNotLogged) ||
		!strings.Contains(err.Error(), "stored before the record kept its tamper-evident log") {
		t.Errorf("a version stored before the log: %v", err)
	}
	if _, err := f.Proof(ctx, "shop", "nolog"); errors.Is(err, ErrNotLogged) || ExitCode(err) != ExitNotFound ||
		!strings.Contains(err.Error(), "no proofs: the record keeps no tamper-evident log") {
		t.Errorf("a record without a log: %v (exit %d)", err, ExitCode(err))
	}
	if _, err := f.Proof(ctx, "shop", "missing"); errors.Is(err, ErrNotLogged) || ExitCode(err) != ExitNotFound ||
		strings.Contains(err.Error(), "tamper-evident") {
		t.Errorf("a version not found: %v (exit %d)", err, ExitCode(err))
	}
	if _, err := f.Proof(ctx, "shop", "html"); err == nil || !strings.Contains(err.Error(), "not a proof") {
		t.Errorf("a body that is not a proof: %v", err)
	}
	want := []string{"/apis/record.optionsrecord.io/v1alpha1/namespaces/shop/changes/logged/proof", "/apis/record.optionsrecord.io/v1alpha1/clusterchanges/logged/proof"}
	if len(paths) < 2 || paths[0] != want[0] || paths[1] != want[1] {
		t.Errorf("paths %v, want %v first", paths, want)
	}
}
