package tamper

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

func (e *env) prove(pool *pgxpool.Pool, v model.Version) []byte {
	e.t.Helper()
	p, err := ProveVersion(context.Background(), pool, v.Cluster, v.UID, v.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestProofVerifiesOffline: the proof of every version of a record with
// hostile content, in logs of several passes, verifies with the verifier
// key alone and gives the version's row and its exact object text.
func TestProofVerifiesOffline(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	var versions []model.Version
	first := e.batch("other\ncluster/..", now, 1)
	e.write(first)
	if _, err := ProveVersion(context.Background(), e.st.Pool(), first.Versions[0].Cluster, first.Versions[0].UID, first.Versions[0].Key); !errors.Is(err, ErrNoLog) {
		t.Errorf("a version of a cluster without a checkpoint: %v", err)
	}
	e.integrate()
	versions = append(versions, first.Versions...)
	for range 3 {
		b := e.batch("other\ncluster/..", now, 6)
		e.write(b)
		e.integrate()
		versions = append(versions, b.Versions...)
	}
	for _, v := range versions {
		p := e.prove(e.st.Pool(), v)
		if !bytes.HasPrefix(p, []byte("c2sp.org/tlog-proof@v1\nextra ")) {
			t.Fatalf("proof:\n%s", p)
		}
		pv, err := VerifyProof(p, e.verifier)
		if err != nil {
			t.Fatalf("version %s: %v\n%s", v.UID, err, p)
		}
		if pv.Ref.UID != v.UID || !bytes.Equal(pv.Ref.Key, v.Key) || pv.Ref.Cluster != v.Cluster || string(pv.Object) != string(v.Object) ||
			pv.Columns["name"] != v.Name || pv.Checkpoint.Size != 38 {
			t.Errorf("proven %+v, object %q; want %s %q", pv.Ref, pv.Object, v.UID, v.Object)
		}
	}
	if _, err := ProveVersion(context.Background(), e.st.Pool(), "default", versions[0].UID, versions[0].Key); !errors.Is(err, ErrNoVersion) {
		t.Errorf("a version of another cluster: %v", err)
	}
	b := e.batch("other\ncluster/..", now, 1)
	e.write(b)
	if _, err := ProveVersion(context.Background(), e.st.Pool(), b.Versions[0].Cluster, b.Versions[0].UID, b.Versions[0].Key); !errors.Is(err, ErrNotLogged) {
		t.Errorf("a version not integrated yet: %v", err)
	}
}

// TestProofFails: a proof whose row, object, hashes or checkpoint is not
// the logged one fails, saying what.
func TestProofFails(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	b := e.batch("default", now, 5)
	e.write(b)
	e.integrate()
	v := b.Versions[2]
	good := e.prove(e.st.Pool(), v)
	e.write(e.batch("default", now, 4))
	e.integrate()
	later := e.prove(e.st.Pool(), v)
	_, otherVerifier := newKey(t)

	split := func(p []byte) (head, cp string) {
		h, c, _ := strings.Cut(string(p), "\n\n")
		return h, c
	}
	extra := func(p []byte, edit func([]byte) []byte) []byte {
		lines := strings.Split(string(p), "\n")
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[1], "extra "))
		lines[1] = "extra " + base64.StdEncoding.EncodeToString(edit(raw))
		return []byte(strings.Join(lines, "\n"))
	}
	line := func(p []byte, n int, edit func(string) string) string {
		lines := strings.Split(string(p), "\n")
		lines[n] = edit(lines[n])
		return strings.Join(lines, "\n")
	}
	goodHead, _ := split(good)
	_, laterCP := split(later)
	for _, tc := range []struct {
		name, proof, want string
		verifier          bool // verify with another key
	}{
		{name: "another checkpoint", proof: goodHead + "\n\n" + laterCP, want: "does not lead to the root"},
		{name: "a changed object", proof: string(extra(good, func(b []byte) []byte { return append(b, ' ') })), want: "object's text"},
		{name: "a changed row", proof: string(extra(good, func(b []byte) []byte {
			return bytes.Replace(b, []byte("ConfigMap"), []byte("ConfigMaq"), 1)
		})), want: "does not lead to the root"},
		{name: "a changed hash", proof: line(good, 3, func(string) string { return "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" }), want: "does not lead to the root"},
		{name: "another index", proof: line(good, 2, func(l string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(l, "index "))
			return "index " + strconv.Itoa(n-1)
		}), want: "does not lead to the root"},
		{name: "a forged checkpoint", proof: strings.Replace(string(good), "\n\n"+keyName, "\n\nforged.example/log", 1), want: "checkpoint signature"},
		{name: "another key", proof: string(good), verifier: true, want: "checkpoint signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vf := e.verifier
			if tc.verifier {
				vf = otherVerifier
			}
			if tc.proof == string(good) && !tc.verifier {
				t.Fatal("the case changed nothing")
			}
			_, err := VerifyProof([]byte(tc.proof), vf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// An UPDATE of the stored state after it was logged: the proof the
	// record gives now fails.
	e.exec(`UPDATE object_versions SET object = '{"forged":true}' WHERE uid = $1`, v.UID)
	if _, err := VerifyProof(e.prove(e.st.Pool(), v), e.verifier); err == nil || !strings.Contains(err.Error(), "does not lead to the root") {
		t.Errorf("proof after an UPDATE: %v", err)
	}
}

// TestProofAsReader: the reader role, which the API reads the record
// with, proves a version; it cannot write the log.
func TestProofAsReader(t *testing.T) {
	r := pgtest.NewRoles(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: r.Ingest, TamperLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := &env{t: t, url: r.Ingest, st: st, dir: t.TempDir()}
	e.signer, e.verifier = newKey(t)
	e.in = e.integrator(e.signer)
	b := e.batch("default", time.Now(), 3)
	e.write(b)
	e.integrate()
	reader, err := pgxpool.New(ctx, r.Reader)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := VerifyProof(e.prove(reader, b.Versions[1]), e.verifier); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "UPDATE log_segments SET checkpoint = ''"); err == nil {
		t.Error("the reader role wrote the log")
	}
}

// TestProofOfAVersionStoredBeforeTheLog: a version the ingest stored
// while it kept no log (before the log was enabled) has no pending row and
// never gets a leaf: ProveVersion says so (ErrBeforeLog), not "not in the
// log yet", which would have the caller try again forever; a version
// stored since, not integrated yet, is still ErrNotLogged.
func TestProofOfAVersionStoredBeforeTheLog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	plain, err := store.Open(ctx, store.Options{URL: e.url})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	now := time.Now()
	old := e.batch("default", now, 2)
	if _, err := plain.WriteBatch(ctx, old); err != nil {
		t.Fatal(err)
	}
	logged := e.batch("default", now, 2)
	e.write(logged)
	e.integrate()
	pending := e.batch("default", now, 1)
	e.write(pending)
	v := old.Versions[0]
	_, err = ProveVersion(ctx, e.st.Pool(), v.Cluster, v.UID, v.Key)
	if !errors.Is(err, ErrBeforeLog) || errors.Is(err, ErrNotLogged) {
		t.Errorf("a version stored before the log: %v; want ErrBeforeLog", err)
	}
	v = pending.Versions[0]
	if _, err := ProveVersion(ctx, e.st.Pool(), v.Cluster, v.UID, v.Key); !errors.Is(err, ErrNotLogged) {
		t.Errorf("a version not integrated yet: %v; want ErrNotLogged", err)
	}
	if _, err := VerifyProof(e.prove(e.st.Pool(), logged.Versions[1]), e.verifier); err != nil {
		t.Errorf("a logged version: %v", err)
	}
}

// TestProofCarriesTheRules: object_versions.rules ("namespace/name" of the
// matching OptionsRecordControllers) is a column of the row's encoding,
// which the leaf hashes: a proof shows it, and a proof whose bundle has
// it removed no longer verifies. So a proof cannot leave it out, and
// docs/security.md says that a proof reveals it.
func TestProofCarriesTheRules(t *testing.T) {
	e := newEnv(t)
	b := e.batch("default", time.Now(), 2)
	e.write(b)
	e.integrate()
	v := b.Versions[1]
	p := e.prove(e.st.Pool(), v)
	pv, err := VerifyProof(p, e.verifier)
	if err != nil {
		t.Fatal(err)
	}
	if rules, _ := pv.Columns["rules"].([]any); len(rules) != 2 || rules[0] != v.Rules[0] {
		t.Errorf("the proof's rules %#v, want %q", pv.Columns["rules"], v.Rules)
	}
	vals := make([]any, len(versionColumns))
	for i, c := range versionColumns {
		vals[i] = pv.Columns[strings.TrimSuffix(c, "::text")]
	}
	vals[slices.Index(versionColumns, "rules")] = nil
	enc, err := RowEncoding(KindVersion, vals)
	if err != nil {
		t.Fatal(err)
	}
	bundle := binary.AppendUvarint([]byte{bundleVersion}, uint64(len(enc)))
	bundle = append(append(bundle, enc...), pv.Object...)
	lines := strings.Split(string(p), "\n")
	lines[1] = "extra " + base64.StdEncoding.EncodeToString(bundle)
	if _, err := VerifyProof([]byte(strings.Join(lines, "\n")), e.verifier); err == nil || !strings.Contains(err.Error(), "does not lead to the root") {
		t.Errorf("a proof without the rules: %v, want it refused", err)
	}
}

// TestProofOfAVersionWithoutIndexEntry: log_version_seconds and
// log_leaf_index are lookup aids, not evidence, and the ingest's credential
// can delete their rows. A logged
// version whose entry is gone is found in the log all the same (its proof
// verifies; edited, it does not), and a version with neither a leaf nor a
// pending row that is newer than the log's start is not "stored before
// the log" (which the plugin accepts, exit 0) but ErrNotInLog.
func TestProofOfAVersionWithoutIndexEntry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	logged := e.batch("default", now, 3)
	e.write(logged)
	e.integrate()
	unindex := func(v model.Version) {
		t.Helper()
		e.exec(`DELETE FROM log_version_seconds WHERE cluster = $1 AND second = $2`, v.Cluster, v.ChangedAt.Unix())
		e.exec(`DELETE FROM log_leaf_index WHERE cluster = $1 AND ref_hash = log_version_ref($2, $3, $4)`, v.Cluster, v.UID, v.Key, v.ChangedAt)
	}
	v := logged.Versions[0]
	unindex(v)
	p, err := ProveVersion(ctx, e.st.Pool(), v.Cluster, v.UID, v.Key)
	if err != nil {
		t.Fatalf("a logged version without its index entry: %v; want its proof", err)
	}
	if _, err := VerifyProof(p, e.verifier); err != nil {
		t.Errorf("the proof of a logged version without its index entry: %v", err)
	}
	v = logged.Versions[1]
	e.exec(`UPDATE object_versions SET name = 'edited' WHERE cluster = $1 AND uid = $2 AND version_key = $3`, v.Cluster, v.UID, v.Key)
	unindex(v)
	p, err = ProveVersion(ctx, e.st.Pool(), v.Cluster, v.UID, v.Key)
	if errors.Is(err, ErrBeforeLog) {
		t.Fatalf("an edited logged version without its index entry: %v", err)
	}
	if err == nil {
		if _, err := VerifyProof(p, e.verifier); err == nil {
			t.Errorf("the proof of an edited version verifies")
		}
	}
	plain, err := store.Open(ctx, store.Options{URL: e.url})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	around := e.batch("default", now, 1)
	if _, err := plain.WriteBatch(ctx, around); err != nil {
		t.Fatal(err)
	}
	v = around.Versions[0]
	_, err = ProveVersion(ctx, e.st.Pool(), v.Cluster, v.UID, v.Key)
	if errors.Is(err, ErrBeforeLog) || !errors.Is(err, ErrNotInLog) || !errors.Is(err, ErrNotLogged) {
		t.Errorf("a version written around the ingest after the log began: %v; want ErrNotInLog", err)
	}
}
