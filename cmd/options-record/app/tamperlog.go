package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/tamper"
)

// loadLogSigner reads the tamper-evident log's signing key
// (--log-signing-key-file: a note private key, PRIVATE+KEY+name+hash+key,
// from a Secret only the ingest identity reads). It is never stored in the
// database.
func loadLogSigner(file string) (note.Signer, error) {
	b, err := secretfile.Read(file, false)
	if err != nil {
		return nil, fmt.Errorf("log signing key: %w", err)
	}
	s, err := note.NewSigner(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("log signing key %s: not a note signer key (options-record log-key makes one)", file)
	}
	return s, nil
}

// runIntegrator runs the tamper-evident log's integrator on the ingest's
// prepared store until ctx ends. It logs only the retention cutoffs the
// rules in force allow (those retention writes: now less their longest
// retention, at least store.MinRetention), and counts those it refuses
// (options_record_log_refused_cutoffs_total).
func (p *ingestProcess) runIntegrator(ctx context.Context) {
	retention := func() time.Duration {
		select {
		case <-p.sharer.Loaded():
			return p.registry.MaxRetention()
		default:
			return 0
		}
	}
	witnesses, err := p.o.witnesses()
	if err != nil {
		p.log.Error("tamper log", "err", err)
		return
	}
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: p.st.Pool(), Signer: p.logSigner,
		Checkpoints: p.checkpoints, Logger: p.log, Retention: retention, MinRetention: store.MinRetention,
		Witnesses: witnesses, WitnessQuorum: p.o.WitnessQuorum, WitnessInterval: p.o.WitnessInterval})
	if err != nil {
		p.log.Error("tamper log", "err", err)
		return
	}
	conflicts := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "options_record_log_witness_conflicts_total",
		Help: "Checkpoints a witness (--witness) refused as not extending the newest it cosigned for the log: the log was rolled back, truncated or forked.",
	}, func() float64 { return float64(in.WitnessConflicts()) })
	if err := p.reg.Register(conflicts); err != nil {
		p.log.Error("tamper log: metric", "err", err)
	}
	refused := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "options_record_log_refused_cutoffs_total",
		Help: "Retention cutoffs in log_pending later than the retention allows, which the integrator did not log (each counted once): written around the retention pass, or replicas whose rules or clocks disagree.",
	}, func() float64 { return float64(in.RefusedCutoffs()) })
	if err := p.reg.Register(refused); err != nil {
		p.log.Error("tamper log: metric", "err", err)
	}
	malformed := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "options_record_log_malformed_pending_batches_total",
		Help: "Pending batches (log_pending_batches) whose packed references are malformed, or whose first_at or ref_count is not their rows', which the integrator took out unlogged: written around the ingest; verify reports the rows they named.",
	}, func() float64 { return float64(in.MalformedBatches()) })
	failures := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "options_record_log_integration_failures_total",
		Help: "Integration passes of the tamper-evident log that failed and rolled back (their pending rows stay for the next pass), and lookups of the newest logged retention cutoff that failed (an edited segment); see the sink's log for why.",
	}, func() float64 { return float64(in.Failures()) })
	integrated := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "options_record_log_integrated_timestamp_seconds",
		Help: "When the tamper-evident log's integrator last drained every cluster's pending rows with no pass failing (0: not yet); alert when it falls behind.",
	}, func() float64 {
		if t := in.Integrated(); !t.IsZero() {
			return float64(t.UnixNano()) / 1e9
		}
		return 0
	})
	for _, c := range []prometheus.Collector{malformed, failures, integrated} {
		if err := p.reg.Register(c); err != nil {
			p.log.Error("tamper log: metric", "err", err)
		}
	}
	in.Run(ctx)
}

// versionProofs answers the restore API's inclusion proofs from the
// record's reader pool (the log is read like the record; the API holds no
// key): a version not in the log (yet) is not found.
// A cluster without a checkpoint has no log (history.ErrNoLog).
func versionProofs(pool *pgxpool.Pool) history.Proofs {
	return func(ctx context.Context, cluster, uid string, key []byte) ([]byte, error) {
		p, err := tamper.ProveVersion(ctx, pool, cluster, uid, key)
		switch {
		case errors.Is(err, tamper.ErrNoLog):
			return nil, history.ErrNoLog
		case errors.Is(err, tamper.ErrBeforeLog):
			return nil, history.ErrBeforeLog
		case errors.Is(err, tamper.ErrNotInLog):
			return nil, history.ErrNotInLog
		case errors.Is(err, tamper.ErrNotLogged) || errors.Is(err, tamper.ErrNoVersion):
			return nil, history.ErrNotLogged
		}
		return p, err
	}
}

// VerifyOptions configure `options-record verify`.
type VerifyOptions struct {
	Database DatabaseOptions
	// VerifierKey is the log's public note key (name+hash+key), or
	// VerifierKeyFile a file holding it.
	VerifierKey, VerifierKeyFile string
	// CheckpointDir (a directory) or CheckpointURL (an object store; one
	// of them) holds the trusted checkpoints, outside the database; one
	// that does not exist or cannot be read is an error.
	CheckpointDir, CheckpointURL string
	// WitnessKeys are the cosignature/v1 verifier keys of the witnesses
	// whose cosignatures each trusted checkpoint must carry,
	// WitnessQuorum of them (0: all).
	WitnessKeys   []string
	WitnessQuorum int
	// Cluster limits the check to one cluster.
	Cluster string
	// Incremental checks each cluster from the checkpoint a previous run
	// verified, kept with the checkpoints (cluster=NAME/verified; a cluster
	// without one is checked fully), and keeps there the newest checkpoint
	// of each cluster that passes (tamper.VerifyOptions.Since).
	Incremental bool
	// RequireTrusted fails each cluster whose log has leaves but no
	// trusted checkpoint in CheckpointDir or CheckpointURL: a mistyped
	// location, or checkpoints deleted, would otherwise leave the log
	// unchecked for a rollback, and the run passing.
	RequireTrusted bool
	// MinRetention is the shortest retention the record was ever kept
	// for (tamper.VerifyOptions.MinRetention); zero: MinRetention. Less
	// than MinRetention is an error: no retention is shorter.
	MinRetention time.Duration
	// Proofs, when set, are inclusion proof files to check offline
	// instead of the database (VerifyProofs).
	Proofs []string
	// WriteState writes each verified proof's state to FILE.json when
	// there is none.
	WriteState bool
	Out        io.Writer
	Logger     *slog.Logger
}

// MinRetention is store.MinRetention, the shortest retention the store
// applies: verify's default --min-retention.
const MinRetention = store.MinRetention

// ErrVerifyFailed is Verify's error when a check failed (each is printed).
var ErrVerifyFailed = errors.New("verify: the record does not match its log")

// Verify checks the record against its tamper-evident logs (package
// tamper), prints what it found to Out, and fails when any check does.
func Verify(ctx context.Context, o VerifyOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	vkey := o.VerifierKey
	if o.VerifierKeyFile != "" {
		b, err := os.ReadFile(o.VerifierKeyFile)
		if err != nil {
			return fmt.Errorf("verifier key: %w", err)
		}
		vkey = string(bytes.TrimSpace(b))
	}
	if vkey == "" {
		return errors.New("verify needs --log-verifier-key or --log-verifier-key-file")
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	if len(o.Proofs) > 0 {
		return VerifyProofs(o.Out, v, o.Proofs, o.WriteState)
	}
	var witnesses []note.Verifier
	for _, k := range o.WitnessKeys {
		w, err := tamper.ParseWitnessKey(k)
		if err != nil {
			return fmt.Errorf("--witness-key: %w", err)
		}
		witnesses = append(witnesses, w)
	}
	switch {
	case len(witnesses) > 0 && o.CheckpointDir == "" && o.CheckpointURL == "":
		return errors.New("verify: --witness-key checks the cosignatures of the trusted checkpoints: give --checkpoint-dir or --checkpoint-url")
	case o.WitnessQuorum < 0 || o.WitnessQuorum > len(witnesses):
		return fmt.Errorf("verify: --witness-quorum %d: want 0 (all) to %d, the --witness-key given", o.WitnessQuorum, len(witnesses))
	}
	minRetention := o.MinRetention
	if minRetention == 0 {
		minRetention = MinRetention
	}
	if minRetention < MinRetention {
		return fmt.Errorf("verify: --min-retention %s is shorter than %s, the shortest retention the record applies", minRetention, MinRetention)
	}
	checkpoints, where, err := openCheckpoints(ctx, o.CheckpointDir, o.CheckpointURL, false)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if checkpoints != nil {
		defer checkpoints.Close()
	}
	var since map[string][]byte
	if o.Incremental {
		if checkpoints == nil {
			return errors.New("verify --incremental keeps the verified checkpoints in --checkpoint-dir or --checkpoint-url: give one")
		}
		if since, err = tamper.ReadVerified(ctx, checkpoints); err != nil {
			return fmt.Errorf("verify: verified checkpoints: %w", err)
		}
	}
	db, err := openDatabase(ctx, o.Database, true, log)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer pool.Close()
	// Each problem is printed as found, none kept: a record with millions
	// of them is checked in the memory of one with none, and a run killed
	// halfway has printed what it found.
	rep, err := tamper.Verify(ctx, pool, tamper.VerifyOptions{Verifier: v, Cluster: o.Cluster, Trusted: checkpoints,
		MinRetention: minRetention, Since: since, Witnesses: witnesses, WitnessQuorum: o.WitnessQuorum,
		KeepProblems: -1, OnProblem: func(p tamper.Problem) { fmt.Fprintln(o.Out, "FAIL", strings.ToValidUTF8(p.String(), "\ufffd")) }})
	if err != nil {
		return err
	}
	if o.Incremental {
		for _, c := range rep.Clusters {
			if c.Checkpoint == nil {
				continue
			}
			if err := tamper.WriteVerified(ctx, checkpoints, c.Cluster, c.Checkpoint); err != nil {
				return fmt.Errorf("verify: keep the verified checkpoint of cluster %q: %w", c.Cluster, err)
			}
		}
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	dir, trusted := strconv.Quote(where), 0
	for _, c := range rep.Clusters {
		fmt.Fprintf(o.Out, "cluster %q: %d leaves, root %v; %d rows verified, %d removed by retention, %d pending\n",
			c.Cluster, c.Size, c.Root, c.Rows, c.Retained, c.Pending)
		for _, co := range c.Cutoffs {
			note := "newest row logged before it " + stamp(co.Newest)
			if co.Newest.IsZero() {
				note = "no row logged before it"
			}
			if !co.Justified {
				note += fmt.Sprintf("; NOT JUSTIFIED: later than that less %s, so it covers nothing after it", minRetention)
			}
			fmt.Fprintf(o.Out, "  retention cutoff %s at leaf %d (%s)\n", stamp(co.At), co.Leaf, note)
		}
		for _, at := range c.PendingCutoffs {
			fmt.Fprintf(o.Out, "  retention cutoff %s pending, not logged: it covers nothing\n", stamp(at))
		}
		if c.Problems > 0 {
			fmt.Fprintf(o.Out, "  %d problems (each a FAIL line, printed as found)\n", c.Problems)
		}
		switch {
		case c.Incremental:
			fmt.Fprintf(o.Out, "  checked from the verified checkpoint of %d leaves (incremental)\n", c.From)
		case o.Incremental:
			fmt.Fprintf(o.Out, "  checked fully: no verified checkpoint of it in %s\n", dir)
		}
		switch {
		case c.Trusted:
			fmt.Fprintf(o.Out, "  trusted checkpoint of %d leaves: checked\n", c.TrustedSize)
			if len(witnesses) > 0 {
				fmt.Fprintf(o.Out, "  cosigned by %d of the %d witnesses\n", c.Cosigned, len(witnesses))
			}
			trusted++
		case checkpoints != nil:
			fmt.Fprintf(o.Out, "  no trusted checkpoint of it in %s\n", dir)
		}
	}
	if checkpoints != nil && trusted == 0 {
		fmt.Fprintf(o.Out, "no trusted checkpoint found in %s: the log was not checked against one\n", dir)
	}
	untrusted := 0
	if o.RequireTrusted && checkpoints != nil {
		for _, c := range rep.Clusters {
			if c.Size > 0 && !c.Trusted {
				fmt.Fprintf(o.Out, "FAIL cluster %q: its log of %d leaves has no trusted checkpoint in %s (--require-trusted)\n", c.Cluster, c.Size, dir)
				untrusted++
			}
		}
	}
	if !rep.OK() || untrusted > 0 {
		return fmt.Errorf("%w: %d problems", ErrVerifyFailed, rep.Failed+untrusted)
	}
	return nil
}

// ProofSuffix ends the name of a proof file; the state it proves is in
// the file of the same name ending in ".json" instead, when there is one.
const ProofSuffix = ".tlog-proof"

// VerifyProofs checks inclusion proof files offline (tamper.VerifyProof:
// the checkpoint's signature by v, the leaf recomputed from the row
// against the signed root, the object's text against the row) and, for
// each FILE.tlog-proof, that FILE.json beside it, when present, holds
// exactly the logged object's text; with writeState, one that is not there
// is written with it (a new file, 0600: a Secret may be recorded in clear).
// It prints one line a file, OK or FAIL and why, and fails when any does.
func VerifyProofs(out io.Writer, v note.Verifier, files []string, writeState bool) error {
	failed := 0
	for _, f := range files {
		name := strings.ToValidUTF8(fmt.Sprintf("%q", f), "\ufffd")
		what, err := verifyProofFile(v, f, writeState)
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL %s: %s\n", name, strings.ToValidUTF8(err.Error(), "\ufffd"))
			continue
		}
		fmt.Fprintf(out, "OK %s: %s\n", name, strings.ToValidUTF8(what, "\ufffd"))
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d proofs failed", ErrVerifyFailed, failed, len(files))
	}
	return nil
}

func verifyProofFile(v note.Verifier, file string, writeState bool) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	pv, err := tamper.VerifyProof(b, v)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("%s is leaf %d of the log %q of %d leaves (signed checkpoint)", pv.Ref, pv.Index, pv.Checkpoint.Origin, pv.Checkpoint.Size)
	base, ok := strings.CutSuffix(file, ProofSuffix)
	if !ok {
		return what, nil
	}
	state, err := os.ReadFile(base + ".json")
	if errors.Is(err, os.ErrNotExist) && writeState && pv.Object != nil {
		f, err := os.OpenFile(base+".json", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", err
		}
		_, err = f.Write(pv.Object)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		return what + "; its logged state written to " + fmt.Sprintf("%q", base+".json"), nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return what + "; no " + fmt.Sprintf("%q", base+".json") + " beside it to compare", nil
	}
	if err != nil {
		return "", err
	}
	if !bytes.Equal(state, pv.Object) {
		return "", fmt.Errorf("%q is not the logged state of %s (the proof holds %d bytes, SHA-256 in the row; the file %d)", base+".json", pv.Ref, len(pv.Object), len(state))
	}
	return what + "; " + fmt.Sprintf("%q", base+".json") + " is its logged state", nil
}

// LogKeyOptions configure `options-record log-key`.
type LogKeyOptions struct {
	// Name is the key's name, which starts each log's origin line.
	Name string
	// SigningKeyFile receives the private key (created, mode 0600).
	SigningKeyFile string
	Out            io.Writer
}

// LogKey makes an Ed25519 note key pair for the tamper-evident log: the
// private key into a new file, the verifier key to Out.
func LogKey(o LogKeyOptions) error {
	skey, vkey, err := note.GenerateKey(rand.Reader, o.Name)
	if err != nil {
		return fmt.Errorf("log-key: %w", err)
	}
	f, err := os.OpenFile(o.SigningKeyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("log-key: %w", err)
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("log-key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("log-key: %w", err)
	}
	_, err = fmt.Fprintln(o.Out, vkey)
	return err
}

// witnesses reads --witness: each URL=VERIFIERKEY, which need
// --checkpoint-dir or --checkpoint-url (the cosignatures are kept there) and a --witness-quorum
// no larger than their number.
func (o *ServeOptions) witnesses() ([]tamper.Witness, error) {
	switch {
	case len(o.Witnesses) == 0 && o.WitnessQuorum != 0:
		return nil, errors.New("--witness-quorum without --witness")
	case len(o.Witnesses) == 0:
		return nil, nil
	case o.CheckpointDir == "" && o.CheckpointURL == "":
		return nil, errors.New("--witness needs --checkpoint-dir or --checkpoint-url: the cosignatures are kept with the checkpoints there")
	case o.WitnessQuorum < 0 || o.WitnessQuorum > len(o.Witnesses):
		return nil, fmt.Errorf("--witness-quorum %d: want 0 (all) to %d, the witnesses given", o.WitnessQuorum, len(o.Witnesses))
	}
	var ws []tamper.Witness
	for _, s := range o.Witnesses {
		w, err := tamper.ParseWitness(s)
		if err != nil {
			return nil, fmt.Errorf("--witness: %w", err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}
