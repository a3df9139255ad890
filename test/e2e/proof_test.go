package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// proofRBAC lets alice and agg-peeker get the proofs of the shop's changes
// (as the shipped options-record-reader does); agg-carol may read the
// changes (aggRBAC) but not their proofs.
const proofRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: options-record-e2e-proof-reader}
rules:
  - apiGroups: [record.optionsrecord.io]
    resources: [changes/proof, clusterchanges/proof]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: proof-readers, namespace: e2e-agg-shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-proof-reader}
subjects:
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-peeker}
`

// verifyProofFiles runs options-record verify --log-verifier-key-file
// PUB --proof FILE... (app.Verify, the command's code path: no database,
// no cluster) and returns what it printed.
func verifyProofFiles(t *testing.T, pub string, files ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := app.Verify(context.Background(), app.VerifyOptions{VerifierKeyFile: pub, Proofs: files, Out: &out, Logger: testLogger(t)})
	return out.String(), err
}

// TestPluginProofs: on a sink keeping the tamper-evident log, kubectl
// record history --proof DIR writes each version's inclusion proof, as
// the caller, and each verifies offline with the log's public key alone
// (the documented options-record verify --proof); export --with-proofs
// writes one beside each manifest. A user who may read the changes but
// not the objects gets no proof, as for a version that does not exist; a
// user without RBAC for changes/proof is refused by the kube-apiserver.
func TestPluginProofs(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true, tamperLog: true, users: []controlplane.User{{Name: "agg-peeker"}},
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	bin := buildPlugin(t)
	registerAggregated(t, w)
	const ns = "e2e-agg-shop"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, []byte(aggRBAC+"---\n"+proofRBAC), "apply", "-f", "-")
	alice, peeker := w.cp.WriteKubeconfig(t, "alice"), w.cp.WriteKubeconfig(t, "agg-peeker")
	carol := w.cp.WriteKubeconfigAuth(t, "agg-carol", w.cp.ClientCertAuth(t, "agg-carol", []string{"cert-operators"}))

	// Hostile text in the state: the proof carries it exactly.
	const hostileNote = "\u202e\a../../etc\n\"}"
	note, _ := json.Marshal(hostileNote)
	kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"note":`+string(note)+`}}`),
		"create", "-n", ns, "-f", "-")
	kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"live"}}`)

	// Until the integrator has logged both versions, history --proof says
	// which are not in the log yet and exits 1.
	var dir string
	var r pluginRun
	attempt := 0
	eventually(t, time.Minute, "both versions' proofs", func() error {
		attempt++
		dir = filepath.Join(t.TempDir(), fmt.Sprintf("proofs-%d", attempt))
		r = plugin(t, bin, alice, nil, "history", "cm/app-config", "-n", ns, "--proof", dir)
		if r.code != 0 || strings.Count(r.errOut, "wrote ") != 2 {
			return fmt.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
		return nil
	})
	t.Logf("kubectl record history cm/app-config --proof:\n%s%s", r.out, r.errOut)
	files, err := filepath.Glob(filepath.Join(dir, "*"+app.ProofSuffix))
	if err != nil || len(files) != 2 {
		t.Fatalf("proof files %v, %v", files, err)
	}
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(f), "app-config-") {
			t.Errorf("proof file %s: want SHORT-NAME%s", f, app.ProofSuffix)
		}
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("proof file %s: %v %v, want 0600", f, fi.Mode(), err)
		}
	}
	out, err := verifyProofFiles(t, w.logVerifierKeyFile, files...)
	t.Logf("options-record verify --proof:\n%s", out)
	if err != nil || strings.Count(out, "OK ") != 2 {
		t.Fatalf("verify --proof: %v\n%s", err, out)
	}

	t.Run("the proof carries the logged state exactly", func(t *testing.T) {
		// --write-state writes FILE.json from the proof; it is the object
		// the record holds, hostile text included.
		var out bytes.Buffer
		if err := app.Verify(context.Background(), app.VerifyOptions{VerifierKeyFile: w.logVerifierKeyFile, Proofs: files, WriteState: true,
			Out: &out, Logger: testLogger(t)}); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		found := false
		for _, f := range files {
			state, err := os.ReadFile(strings.TrimSuffix(f, app.ProofSuffix) + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var obj struct{ Data map[string]string }
			if err := json.Unmarshal(state, &obj); err != nil {
				t.Fatalf("%s: %v", state, err)
			}
			found = found || obj.Data["note"] == hostileNote
		}
		if !found {
			t.Errorf("no state holds the hostile note")
		}
	})

	t.Run("a changed proof fails", func(t *testing.T) {
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(t.TempDir(), "bad"+app.ProofSuffix)
		b = regexp.MustCompile(`\nindex [0-9]+\n`).ReplaceAll(b, []byte("\nindex 999999\n"))
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := verifyProofFiles(t, w.logVerifierKeyFile, bad); err == nil || !strings.Contains(out, "FAIL ") {
			t.Errorf("a proof with another index: %v\n%s", err, out)
		}
	})

	t.Run("no proof for whoever may not read the object", func(t *testing.T) {
		// agg-peeker may read changes and get their proofs, but not
		// ConfigMaps: history refuses to list them, and writes nothing.
		pdir := filepath.Join(t.TempDir(), "peeker")
		r := plugin(t, bin, peeker, nil, "history", "cm/app-config", "-n", ns, "--proof", pdir)
		if r.code == 0 || strings.Contains(r.errOut, "wrote") {
			t.Errorf("agg-peeker: exit %d %s%s", r.code, r.out, r.errOut)
		}
		if _, err := os.Stat(pdir); !os.IsNotExist(err) {
			t.Errorf("agg-peeker's proof directory was made: %v", err)
		}
		// Asked by the version's long name: the not found of a missing one.
		long := strings.Fields(plugin(t, bin, alice, nil, "history", "cm/app-config", "-n", ns, "-o", "jsonpath={.items[0].metadata.name}").out)
		if len(long) != 1 {
			t.Fatalf("long name: %v", long)
		}
		path := "/apis/record.optionsrecord.io/v1alpha1/namespaces/" + ns + "/changes/"
		_, hidden, err := w.cp.Kubectl(t, "agg-peeker", nil, "get", "--raw", path+long[0]+"/proof")
		_, missing, err2 := w.cp.Kubectl(t, "agg-peeker", nil, "get", "--raw", path+"app-config-00000000/proof")
		if err == nil || err2 == nil || !strings.Contains(hidden, "NotFound") || !strings.Contains(missing, "NotFound") ||
			strings.Contains(hidden, "tamper") || strings.Contains(hidden, "configmaps") {
			t.Errorf("agg-peeker's proof of a version it may not read: %v %s; of a missing one: %v %s", err, hidden, err2, missing)
		}
		// agg-carol may read the changes but has no RBAC for their proofs:
		// the kube-apiserver's authorizer refuses.
		r = plugin(t, bin, carol, nil, "history", "cm/app-config", "-n", ns, "--proof", filepath.Join(t.TempDir(), "carol"))
		if r.code != 3 || !strings.Contains(r.errOut, "you may not get the proof") {
			t.Errorf("agg-carol without changes/proof: exit %d %s%s", r.code, r.out, r.errOut)
		}
	})

	t.Run("export --with-proofs writes a proof beside each manifest", func(t *testing.T) {
		edir := filepath.Join(t.TempDir(), "export")
		r := plugin(t, bin, alice, nil, "export", "-n", ns, "--resources", "cm", "--with-proofs", "-o", edir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s%s", r.code, r.out, r.errOut)
		}
		manifest := filepath.Join(edir, "configmaps_app-config.yaml")
		proof := filepath.Join(edir, "configmaps_app-config"+app.ProofSuffix)
		if _, err := os.Stat(manifest); err != nil {
			t.Fatal(err)
		}
		out, err := verifyProofFiles(t, w.logVerifierKeyFile, proof)
		if err != nil || !strings.Contains(out, "OK ") || !strings.Contains(out, "is its logged state") {
			t.Errorf("verify --proof of the exported proof (and X.json beside it): %v\n%s", err, out)
		}
		// The proof covers X.json, the logged state: an edited one fails.
		state := filepath.Join(edir, "configmaps_app-config.json")
		b, err := os.ReadFile(state)
		if err != nil || !strings.Contains(string(b), `"live"`) {
			t.Fatalf("the exported state: %v\n%s", err, b)
		}
		if err := os.WriteFile(state, bytes.Replace(b, []byte(`"live"`), []byte(`"lies"`), 1), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := verifyProofFiles(t, w.logVerifierKeyFile, proof); err == nil || !strings.Contains(out, "FAIL ") {
			t.Errorf("verify --proof with an edited X.json: %v\n%s", err, out)
		}
	})

	// The whole record the real kube-apiserver's events made (their
	// annotations and user extras in jsonb, hashed at ingest as PostgreSQL
	// prints them) verifies; a stored state edited afterwards fails, named.
	t.Run("verify passes on the record, and names an edited row", func(t *testing.T) {
		ctx := context.Background()
		dsn := w.db.Config().ConnString()
		verify := func() (string, error) {
			var out bytes.Buffer
			err := app.Verify(ctx, app.VerifyOptions{Database: app.DatabaseOptions{URL: dsn}, VerifierKeyFile: w.logVerifierKeyFile,
				CheckpointDir: t.TempDir(), Cluster: "e2e", Out: &out, Logger: testLogger(t)})
			return out.String(), err
		}
		out, err := verify()
		t.Logf("options-record verify:\n%s", out)
		if err != nil {
			t.Fatalf("verify of the end-to-end record: %v", err)
		}
		var events, logged int
		if err := w.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE cluster = 'e2e'),
			(SELECT coalesce(sum(cardinality(kinds)), 0) FROM log_segments WHERE cluster = 'e2e')`).Scan(&events, &logged); err != nil {
			t.Fatal(err)
		}
		if events == 0 || logged < events {
			t.Fatalf("%d events, %d leaves: want every event logged", events, logged)
		}
		var uid string
		err = w.db.QueryRow(ctx, `UPDATE object_versions SET object = '{"tampered":true}'
			WHERE (uid, version_key) IN (SELECT uid, version_key FROM object_versions
				WHERE cluster = 'e2e' AND namespace = $1 AND name = 'app-config' ORDER BY changed_at DESC LIMIT 1)
			RETURNING uid`, ns).Scan(&uid)
		if err != nil {
			t.Fatal(err)
		}
		out, err = verify()
		if !errors.Is(err, app.ErrVerifyFailed) || !strings.Contains(out, uid) {
			t.Errorf("verify after an UPDATE of app-config's newest state (uid %s): %v\n%s", uid, err, out)
		}
	})
}
