package record

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/store"
)

// TestProofGet: changes/proof answers the proof text of a version the
// caller may read, in its own namespace; a version the caller may not
// read (a Secret's), one of another namespace and a missing one are the
// same not found, and the proof function is never asked for them; a
// version not in the log, or a record without a log, is a not found that
// says which in its cause.
func TestProofGet(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	v := func(uid, resource, ns, name string, first byte) store.VersionRecord {
		key := append([]byte{first}, bytes.Repeat([]byte{0x11}, 31)...)
		return store.VersionRecord{Cluster: "e2e", UID: uid, Key: key, Verb: "update", ChangedAt: at, APIVersion: "v1",
			Resource: resource, Namespace: ns, Name: name, Username: "bob"}
	}
	hist, err := history.New(history.Options{Reader: &fakeVersions{versions: []store.VersionRecord{
		v("uid-a", "configmaps", "shop", "app-config", 0x3f),
		v("uid-n", "configmaps", "shop", "not-logged", 0x4f),
		v("uid-b", "configmaps", "shop", "before-log", 0x7f),
		v("uid-i", "configmaps", "shop", "not-in-log", 0x8f),
		v("uid-s", "secrets", "shop", "db", 0x5f),
		v("uid-o", "configmaps", "other", "web", 0x6f),
	}}, Authorizer: getAllButSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	proofs := func(_ context.Context, cluster, uid string, key []byte) ([]byte, error) {
		asked = append(asked, uid)
		switch uid {
		case "uid-n":
			return nil, history.ErrNotLogged
		case "uid-b":
			return nil, history.ErrBeforeLog
		case "uid-i":
			return nil, history.ErrNotInLog
		}
		return []byte("c2sp.org/tlog-proof@v1\n" + cluster + "/" + uid + "\n"), nil
	}
	log := slog.New(slog.DiscardHandler)
	s := &proofStorage{changes: newChangeStorage(log, hist, nil, "e2e", true), proofs: proofs}
	ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"}), "shop")

	got, err := s.Get(ctx, "app-config-3f111111", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _, mime, err := got.(rest.ResourceStreamer).InputStream(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(body)
	if string(text) != "c2sp.org/tlog-proof@v1\ne2e/uid-a\n" || mime != recordv1alpha1.ProofContentType {
		t.Errorf("proof %q (%s)", text, mime)
	}

	if _, err := s.Get(ctx, "nothing-77111111", &metav1.GetOptions{}); !apierrors.IsNotFound(err) || len(causes(err)) != 0 {
		t.Fatalf("a missing version: %v", err)
	}
	for _, name := range []string{"db-5f111111", "uid-s." + hexKey(0x5f), "web-6f111111", "uid-o." + hexKey(0x6f)} {
		_, err := s.Get(ctx, name, &metav1.GetOptions{})
		if !apierrors.IsNotFound(err) || len(causes(err)) != 0 {
			t.Errorf("proof of %s (not readable in shop): %v, want the not found of a missing version", name, err)
		}
	}
	if len(asked) != 1 {
		t.Errorf("the proof function was asked for %v, want only uid-a", asked)
	}
	_, err = s.Get(ctx, "not-logged-4f111111", &metav1.GetOptions{})
	if c := causes(err); !apierrors.IsNotFound(err) || len(c) != 1 || c[0].Type != recordv1alpha1.CauseNotLogged {
		t.Errorf("a version not in the log: %v %v", err, c)
	}
	_, err = s.Get(ctx, "before-log-7f111111", &metav1.GetOptions{})
	if c := causes(err); !apierrors.IsNotFound(err) || len(c) != 1 || c[0].Type != recordv1alpha1.CauseBeforeLog {
		t.Errorf("a version stored before the log: %v %v", err, c)
	}
	// Written around the ingest after the log began: not in the log, and
	// not "stored before" it, whose answer the plugin accepts.
	_, err = s.Get(ctx, "not-in-log-8f111111", &metav1.GetOptions{})
	if c := causes(err); !apierrors.IsNotFound(err) || len(c) != 1 || c[0].Type != recordv1alpha1.CauseNotLogged ||
		!strings.Contains(c[0].Message, "around the ingest") || strings.HasPrefix(c[0].Message, "not found") {
		t.Errorf("a version written around the ingest: %v %v", err, c)
	}
	for _, p := range []history.Proofs{nil, func(context.Context, string, string, []byte) ([]byte, error) { return nil, history.ErrNoLog }} {
		s.proofs = p
		_, err = s.Get(ctx, "app-config-3f111111", &metav1.GetOptions{})
		if c := causes(err); !apierrors.IsNotFound(err) || len(c) != 1 || c[0].Type != recordv1alpha1.CauseNoLog {
			t.Errorf("no log: %v %v", err, c)
		}
	}
}

func hexKey(first byte) string {
	const digits = "0123456789abcdef"
	b := []byte{digits[first>>4], digits[first&15]}
	return string(b) + string(bytes.Repeat([]byte("11"), 31))
}

func causes(err error) []metav1.StatusCause {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return nil
	}
	return st.Status().Details.Causes
}
