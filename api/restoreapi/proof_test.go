package restoreapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/tamper"
)

// TestProofAuthorizedAsTheVersion: over a real record with its
// tamper-evident log, the API answers a version's inclusion proof to a
// caller who may read the version, and it verifies offline with the log's
// public key alone; a caller who may not read the version (a Secret, for
// denySecrets) gets the very NotFound of a reading of it, and of a
// missing version; a version not yet integrated, or an API without
// proofs, is not found either.
func TestProofAuthorizedAsTheVersion(t *testing.T) {
	ctx := context.Background()
	st := openRecord(t, store.Options{TamperLog: true},
		rec{verb: "create", user: "bob", resource: "configmaps", ns: "prod", name: "app"},
		rec{verb: "create", user: "bob", resource: "secrets", ns: "prod", name: "db", at: 1})
	skey, vkey, err := note.GenerateKey(rand.Reader, "record.example/log")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: st.Pool(), Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	proofs := func(ctx context.Context, cluster, uid string, key []byte) ([]byte, error) {
		p, err := tamper.ProveVersion(ctx, st.Pool(), cluster, uid, key)
		if errors.Is(err, tamper.ErrNotLogged) || errors.Is(err, tamper.ErrNoVersion) {
			return nil, fmt.Errorf("%w: %v", ErrNotLogged, err)
		}
		return p, err
	}
	h := recordServer(t, st, denySecrets{}, Options{Proofs: proofs})
	path := func(resource string) string {
		var uid string
		var key []byte
		if err := st.Pool().QueryRow(ctx, "SELECT uid, version_key FROM object_versions WHERE resource = $1", resource).Scan(&uid, &key); err != nil {
			t.Fatal(err)
		}
		return "/api/v1/clusters/default/objects/" + uid + "/versions/" + hex.EncodeToString(key)
	}

	req := httptest.NewRequest(http.MethodGet, path("configmaps")+"/proof", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	if rr.Code != http.StatusOK || rr.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("proof: %d %s\n%s", rr.Code, rr.Header().Get("Content-Type"), rr.Body)
	}
	pv, err := tamper.VerifyProof(rr.Body.Bytes(), verifier)
	if err != nil {
		t.Fatalf("the served proof does not verify: %v\n%s", err, rr.Body)
	}
	var object string
	if err := st.Pool().QueryRow(ctx, "SELECT object::text FROM object_versions WHERE resource = 'configmaps'").Scan(&object); err != nil {
		t.Fatal(err)
	}
	if pv.Columns["name"] != "app" || string(pv.Object) != object || pv.Checkpoint.Size != 4 {
		t.Errorf("proven %v, object %q, tree %d; want app, %q, 4", pv.Ref, pv.Object, pv.Checkpoint.Size, object)
	}

	var short string
	if err := st.Pool().QueryRow(ctx, "SELECT name || '-' || left(encode(version_key, 'hex'), 8) FROM object_versions WHERE resource = 'configmaps'").Scan(&short); err != nil {
		t.Fatal(err)
	}
	code, e, byName := do(t, h, http.MethodGet, "/api/v1/clusters/default/versions/"+short+"/proof", "")
	if code != http.StatusOK || byName != rr.Body.String() {
		t.Errorf("the proof by short name %s: %d %+v\n%s", short, code, e, byName)
	}

	secret := path("secrets")
	code, denied, _ := do(t, h, http.MethodGet, secret+"/proof", "")
	_, read, _ := do(t, h, http.MethodGet, secret, "")
	if code != http.StatusNotFound || denied != read {
		t.Errorf("proof of a version the caller may not read: %d %+v; reading it: %+v", code, denied, read)
	}
	var secretShort string
	if err := st.Pool().QueryRow(ctx, "SELECT name || '-' || left(encode(version_key, 'hex'), 8) FROM object_versions WHERE resource = 'secrets'").Scan(&secretShort); err != nil {
		t.Fatal(err)
	}
	code, deniedByName, _ := do(t, h, http.MethodGet, "/api/v1/clusters/default/versions/"+secretShort+"/proof", "")
	_, readByName, _ := do(t, h, http.MethodGet, "/api/v1/clusters/default/versions/"+secretShort, "")
	if code != http.StatusNotFound || deniedByName != readByName {
		t.Errorf("proof by name of a version the caller may not read: %d %+v; reading it: %+v", code, deniedByName, readByName)
	}
	missingKey := strings.Repeat("0", 64)
	missing := secret[:strings.LastIndexByte(secret, '/')+1] + missingKey
	_, absent, _ := do(t, h, http.MethodGet, missing+"/proof", "")
	if absent.Reason != denied.Reason || strings.ReplaceAll(absent.Message, missingKey, "") != strings.ReplaceAll(denied.Message, secret[strings.LastIndexByte(secret, '/')+1:], "") {
		t.Errorf("denied %+v differs from missing %+v", denied, absent)
	}

	writeRecord(t, st, rec{verb: "update", user: "bob", resource: "configmaps", ns: "prod", name: "late", at: 9})
	var lateUID string
	var lateKey []byte
	if err := st.Pool().QueryRow(ctx, "SELECT uid, version_key FROM object_versions WHERE name = 'late'").Scan(&lateUID, &lateKey); err != nil {
		t.Fatal(err)
	}
	code, e, _ = do(t, h, http.MethodGet, "/api/v1/clusters/default/objects/"+lateUID+"/versions/"+hex.EncodeToString(lateKey)+"/proof", "")
	if code != http.StatusNotFound || !strings.Contains(e.Message, "not in the tamper-evident log") {
		t.Errorf("a version not integrated yet: %d %+v", code, e)
	}
	code, e, _ = do(t, recordServer(t, st, denySecrets{}, Options{}), http.MethodGet, path("configmaps")+"/proof", "")
	if code != http.StatusNotFound || !strings.Contains(e.Message, "keeps no tamper-evident log") {
		t.Errorf("an API without proofs: %d %+v", code, e)
	}
}
