package app

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"gocloud.dev/blob"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/tamper"
)

// maxLoggedProblems bounds the problems one periodic verify logs (each
// names a row); the gauge counts them all.
const maxLoggedProblems = 100

// logVerifier is the verifier of the log's signing key file: the
// Ed25519 public key of its private key, under its name.
func logVerifier(file string) (note.Verifier, error) {
	b, err := secretfile.Read(file, false)
	if err != nil {
		return nil, fmt.Errorf("log signing key: %w", err)
	}
	bad := fmt.Errorf("log signing key %s: not a note Ed25519 signer key", file)
	// PRIVATE+KEY+name+hash+base64(algorithm byte, seed): note's format.
	f := strings.SplitN(string(bytes.TrimSpace(b)), "+", 5)
	if len(f) != 5 || f[0] != "PRIVATE" || f[1] != "KEY" {
		return nil, bad
	}
	k, err := base64.StdEncoding.DecodeString(f[4])
	if err != nil || len(k) != 1+ed25519.SeedSize || k[0] != 1 {
		return nil, bad
	}
	pub := ed25519.NewKeyFromSeed(k[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(f[2], pub)
	if err != nil {
		return nil, fmt.Errorf("log signing key %s: %w", file, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("log signing key %s: %w", file, err)
	}
	if strings.Split(vkey, "+")[1] != f[3] {
		return nil, fmt.Errorf("log signing key %s: its hash is not that of its key", file)
	}
	return v, nil
}

// logVerifyLoop verifies the record against its log periodically
// (--verify-interval), never fully: a full verify reads the whole record
// and sorts it on the database server, too much to repeat every few
// minutes beside the ingest. Each cluster is checked incrementally (tamper.VerifyOptions.Since)
// from, the first time, the checkpoint `verify --incremental` verified
// (cluster=NAME/verified in --checkpoint-dir), else the newest checkpoint
// the database holds when the loop first sees the cluster (trust on first
// use: it detects what changes from then on); then from the newest
// checkpoint each cluster passed at (kept in memory). A full check is
// `options-record verify`'s, run from outside.
type logVerifyLoop struct {
	verifier     note.Verifier
	checkpoints  *blob.Bucket // --checkpoint-dir or --checkpoint-url: the verified checkpoints to start from; nil: none
	since        map[string][]byte
	readDir      bool // the verified checkpoints are read
	lastSuccess  prometheus.Gauge
	problems     prometheus.Gauge
	minRetention time.Duration
}

func newLogVerifyLoop(v note.Verifier, checkpoints *blob.Bucket, reg prometheus.Registerer) (*logVerifyLoop, error) {
	l := &logVerifyLoop{verifier: v, checkpoints: checkpoints, since: map[string][]byte{}, minRetention: store.MinRetention,
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "options_record_log_verify_last_success_timestamp_seconds",
			Help: "When the last periodic verify (--verify-interval) that found no problem ended, Unix seconds; 0: none yet.",
		}),
		problems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "options_record_log_verify_problems",
			Help: "Problems the last periodic verify (--verify-interval) found: rows or logs that do not match (each logged); 0: it passed.",
		}),
	}
	for _, c := range []prometheus.Collector{l.lastSuccess, l.problems} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return l, nil
}

type warnInfoLogger interface {
	Warn(string, ...any)
	Info(string, ...any)
}

// start gives each cluster with a log and no checkpoint to start from
// one: its verified checkpoint among the checkpoints (read once; none
// when they cannot be read), else the newest the database holds now.
func (l *logVerifyLoop) start(ctx context.Context, pool *pgxpool.Pool, log warnInfoLogger) error {
	if !l.readDir && l.checkpoints != nil {
		// Verified checkpoints that cannot be read (a bucket that does
		// not exist, an ingest identity not allowed to read it, any read
		// error) are none: the loop starts from the database's newest
		// (docs/security.md: what the ingest's identity needs).
		verified, err := tamper.ReadVerified(ctx, l.checkpoints)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Warn("tamper log: verify: the verified checkpoints cannot be read: starting from the newest checkpoints in the database", "err", err)
		}
		for c, b := range verified {
			l.since[c] = b
			log.Info("tamper log: verify: starting from the verified checkpoint", "cluster", c)
		}
	}
	l.readDir = true
	newest, err := tamper.NewestCheckpoints(ctx, pool)
	if err != nil {
		return err
	}
	for c, b := range newest {
		if _, ok := l.since[c]; !ok {
			l.since[c] = b
			log.Info("tamper log: verify: starting from the newest checkpoint in the database (trusted on first use; a full check is options-record verify's)", "cluster", c)
		}
	}
	return nil
}

// once runs one incremental verify of every cluster with a log on pool,
// sets the metrics and logs the problems; an error is for a run that
// could not start, or was stopped (ctx). A cluster whose check could not
// run is a problem of that cluster (tamper.Verify), and the others are
// checked: one cluster's planted row must not hide another's tampering.
func (l *logVerifyLoop) once(ctx context.Context, pool *pgxpool.Pool, log warnInfoLogger) (tamper.Report, error) {
	var rep tamper.Report
	if err := l.start(ctx, pool, log); err != nil {
		return rep, err
	}
	for _, c := range slices.Sorted(maps.Keys(l.since)) {
		r, err := tamper.Verify(ctx, pool, tamper.VerifyOptions{Verifier: l.verifier, Cluster: c, MinRetention: l.minRetention, Since: l.since,
			KeepProblems: maxLoggedProblems})
		if err != nil && ctx.Err() != nil {
			return rep, err
		}
		if err != nil {
			p := tamper.Problem{Cluster: c, Row: "check", What: "it could not be checked: " + err.Error()}
			r = tamper.Report{Clusters: []tamper.ClusterReport{{Cluster: c, Problems: 1}}, Problems: []tamper.Problem{p}, Failed: 1}
		}
		rep.Clusters = append(rep.Clusters, r.Clusters...)
		rep.Problems = append(rep.Problems, r.Problems...)
		rep.Failed += r.Failed
	}
	for _, c := range rep.Clusters {
		if c.Checkpoint != nil {
			l.since[c.Cluster] = c.Checkpoint
		}
	}
	l.problems.Set(float64(rep.Failed))
	for i, p := range rep.Problems {
		if i == maxLoggedProblems {
			break
		}
		log.Warn("tamper log: verify failed", "cluster", p.Cluster, "row", p.Row, "problem", p.What)
	}
	if rep.Failed > maxLoggedProblems {
		log.Warn("tamper log: verify: more problems not logged", "problems", rep.Failed)
	}
	if rep.OK() {
		l.lastSuccess.SetToCurrentTime()
	}
	return rep, nil
}

// runLogVerify verifies the record every interval until ctx ends.
func (p *ingestProcess) runLogVerify(ctx context.Context) {
	v, err := logVerifier(p.o.LogSigningKeyFile)
	if err != nil {
		p.log.Error("tamper log: verify", "err", err)
		return
	}
	l, err := newLogVerifyLoop(v, p.checkpoints, p.reg)
	if err != nil {
		p.log.Error("tamper log: verify: metrics", "err", err)
		return
	}
	t := time.NewTicker(p.o.VerifyInterval)
	defer t.Stop()
	for {
		if _, err := l.once(ctx, p.st.Pool(), p.log); err != nil && !errors.Is(err, context.Canceled) {
			p.log.Error("tamper log: verify could not run", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
