package tamper

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/pgtest"
)

// verifyInMemory is the full check as it was before it streamed: every
// leaf and every row's digest in memory, compared by map (the functions
// the incremental check still uses). TestFullVerifyAsInMemory holds the
// streamed check to its findings.
func verifyInMemory(t *testing.T, e *env) ([]Problem, ClusterReport) {
	t.Helper()
	ctx := context.Background()
	v := &verifier{o: VerifyOptions{Verifier: e.verifier, Trusted: e.bucket, MinRetention: DefaultMinRetention}, cr: ClusterReport{Cluster: "default"}}
	v.trusted, v.trustedErr = ReadTrusted(ctx, e.bucket, "default") // before the snapshot, as Verify
	err := pgx.BeginTxFunc(ctx, e.st.Pool(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		leaves, stored, last, err := v.readSegments(ctx, tx, 0)
		if err != nil {
			return err
		}
		size := int64(len(leaves))
		mem := v.checkTree(0, leaves, stored, nil)
		root := v.checkSigned(size, mem, last)
		v.checkTrusted(ctx, size, root, mem)
		rows := map[string]leaf{}
		keep := func(r Ref, d [32]byte) error {
			rows[r.id()] = leaf{r, d}
			return nil
		}
		if err := scanRows(ctx, tx, KindEvent, eventsOfClusterSQL, []any{v.cr.Cluster}, keep); err != nil {
			return err
		}
		if err := scanRows(ctx, tx, KindVersion, versionsOfClusterSQL, []any{v.cr.Cluster}, keep); err != nil {
			return err
		}
		pending, err := v.readPending(ctx, tx)
		if err != nil {
			return err
		}
		logged := v.checkLeaves(0, time.Time{}, leaves, rows)
		v.checkExtra(rows, logged, pending, nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.problems) > 0 {
		v.cr.Checkpoint = nil
	}
	return v.problems, v.cr
}

// TestFullVerifyAsInMemory: the streamed full check finds what the
// in-memory one found (in another order: it reports the rows' problems as
// it meets them, by id, not by leaf), with the same counts, on a
// record tampered every way at once: rows deleted, changed (a value, a
// version's time), inserted (an event's key at another time, a version
// whose uid differs only in case), a leaf logged twice, a leaf of no table, a stored hash
// edited, a planted cutoff logged and one pending, rows pending; in a
// database whose collation is C and in one whose collation is ICU's,
// which sorts the uids otherwise than Go compares them.
func TestFullVerifyAsInMemory(t *testing.T) {
	type tamper struct {
		name   string
		tamper func(e *env)
	}
	tampers := []tamper{{
		name:   "untouched",
		tamper: func(*env) {},
	}, {
		name: "tampered every way",
		tamper: func(e *env) {
			e.exec(`DELETE FROM events WHERE ctid IN (SELECT ctid FROM events ORDER BY audit_id LIMIT 3)`)
			e.exec(`DELETE FROM events WHERE ctid IN (SELECT ctid FROM events ORDER BY stage_at LIMIT 4)`) // retained
			e.exec(`DELETE FROM object_versions WHERE ctid IN (SELECT ctid FROM object_versions ORDER BY changed_at DESC LIMIT 4)`)
			e.exec(`DELETE FROM object_versions WHERE uid LIKE 'uid-7-%' OR uid LIKE 'uid-30-%' OR uid LIKE 'alpha-%'`)
			e.exec(`UPDATE object_versions SET object = '{"changed":true}' WHERE uid LIKE 'uid-11-%'`)
			e.exec(`UPDATE object_versions SET changed_at = changed_at + interval '1 second' WHERE uid LIKE 'uid-12-%'`)
			e.exec(`INSERT INTO events SELECT cluster, event_key, stage_at + interval '1 microsecond', received_at, audit_id, stage, verb,
				request_uri, 'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent,
				api_group, api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason,
				response_message, request_object, annotations, rules, secret_digested, ingested_at FROM events ORDER BY audit_id LIMIT 5 OFFSET 5`)
			e.exec(`INSERT INTO object_versions SELECT cluster, upper(uid), version_key, resource_version, origin, verb, changed_at,
				event_key, api_group, api_version, kind, resource, subresource, namespace, name, created, deleted, complete, object,
				secret_digested, rules, object_exact FROM object_versions WHERE uid LIKE 'uid-2_-%' AND upper(uid) <> uid`)
			// Leaf 1 logged again as leaf 2; leaf 4 of no table; a stored hash of
			// a later segment edited.
			e.exec(`UPDATE log_segments SET kinds[3] = kinds[2], uids[3] = uids[2], keys[3] = keys[2], ats[3] = ats[2],
				digests = substring(digests FROM 1 FOR 64) || substring(digests FROM 33 FOR 32) || substring(digests FROM 97),
				kinds[5] = 7 WHERE first_index = 0`)
			e.exec(`UPDATE log_segments SET hashes = '\xff'::bytea || substring(hashes FROM 2)
				WHERE first_index = (SELECT max(first_index) FROM log_segments WHERE hashes <> '')`)
			// Pending, with uids that C and ICU sort apart (the full check
			// merges the pending rows as a cursor sorted as the rows).
			b := e.batch("default", time.Now(), 8)
			for i := range b.Versions {
				b.Versions[i].UID = []string{"alpha", "Beta", "gamma", "Zeta"}[i%4] + "-" + b.Versions[i].UID
			}
			e.write(b)
		},
	}, {
		// Every stored hash edited, the trusted checkpoint an older one:
		// the full check keeps only the rebuilt hashes its root and the
		// consistency proof read, not each that differs.
		name: "stored hashes edited",
		tamper: func(e *env) {
			e.exec(`UPDATE log_segments SET hashes = decode(repeat('00', octet_length(hashes)), 'hex')`)
			var older string
			if err := e.st.Pool().QueryRow(context.Background(),
				`SELECT checkpoint FROM log_segments WHERE cluster = 'default' ORDER BY first_index LIMIT 1 OFFSET 2`).Scan(&older); err != nil {
				e.t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.dir, "cluster=default", "latest"), []byte(older), 0o644); err != nil {
				e.t.Fatal(err)
			}
		},
	}}
	for _, collation := range []string{"C", "ICU en"} {
		for _, tc := range tampers {
			t.Run(collation+"/"+tc.name, func(t *testing.T) {
				db := pgtest.NewDatabase(t)
				if collation != "C" {
					db = icuDatabase(t, db)
				}
				e := newEnvAt(t, db)
				now := time.Now()
				e.write(e.batch("default", now.AddDate(0, 0, -10), 10))
				e.write(e.batch("default", now.Add(-time.Minute), 10))
				e.integrate()
				// A cutoff retention allowed, one no retention allowed (logged all
				// the same), and one refused (pending).
				e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now() - interval '5 days')`)
				e.integrate()
				e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())`)
				minRetention := e.in.o.MinRetention
				e.in.o.MinRetention = -100 * 365 * 24 * time.Hour
				e.integrate()
				e.in.o.MinRetention = minRetention
				// Uids that C and ICU sort apart: Beta < Zeta < alpha < gamma in C.
				b := e.batch("default", now.Add(-time.Second), 10)
				for i := range b.Versions {
					b.Versions[i].UID = []string{"alpha", "Beta", "gamma", "Zeta"}[i%4] + "-" + b.Versions[i].UID
				}
				e.write(b)
				e.integrate()
				e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())`)
				e.integrate()
				tc.tamper(e)

				rep := e.verify(true)
				wantProblems, wantReport := verifyInMemory(t, e)
				byString := cmpopts.SortSlices(func(a, b Problem) bool { return a.String() < b.String() })
				if diff := cmp.Diff(wantProblems, rep.Problems, byString); diff != "" {
					t.Errorf("problems (-in memory +streamed):\n%s", diff)
				}
				if diff := cmp.Diff(wantReport, rep.Clusters[0]); diff != "" {
					t.Errorf("report (-in memory +streamed):\n%s", diff)
				}
				t.Logf("%+v\n%s", rep.Clusters[0], problems(rep))
				if tc.name != "untouched" && len(rep.Problems) < 10 {
					t.Errorf("%d problems:\n%s", len(rep.Problems), problems(rep))
				}
			})
		}
	}
}

// icuDatabase makes a database beside base (pgtest's, whose collation is
// C) whose collation is ICU's "en", as a production database's often is:
// text sorts there otherwise than Go compares it. It returns its URL.
func icuDatabase(t *testing.T, base string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var name string
	if err := conn.QueryRow(ctx, "SELECT left(current_database(), 55) || '_icu'").Scan(&name); err != nil {
		t.Fatal(err)
	}
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+quoted+" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.utf8' LOCALE_PROVIDER icu ICU_LOCALE 'en'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	if u, err := url.Parse(base); err == nil && strings.HasPrefix(base, "postgres") {
		u.Path, u.RawPath = "/"+name, ""
		return u.String()
	}
	return base + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "'"
}
