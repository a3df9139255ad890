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
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
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

// startIntegrator runs the tamper-evident log's integrator on the ingest's
// prepared store until ctx ends.
func (p *ingestProcess) runIntegrator(ctx context.Context) {
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: p.st.Pool(), Signer: p.logSigner,
		CheckpointDir: p.o.CheckpointDir, Logger: p.log})
	if err != nil {
		p.log.Error("tamper log", "err", err)
		return
	}
	in.Run(ctx)
}

// VerifyOptions configure `options-record verify`.
type VerifyOptions struct {
	Database DatabaseOptions
	// VerifierKey is the log's public note key (name+hash+key), or
	// VerifierKeyFile a file holding it.
	VerifierKey, VerifierKeyFile string
	// CheckpointDir holds the trusted checkpoints, outside the database.
	CheckpointDir string
	// Cluster limits the check to one cluster.
	Cluster string
	Out     io.Writer
	Logger  *slog.Logger
}

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
	rep, err := tamper.Verify(ctx, pool, tamper.VerifyOptions{Verifier: v, Cluster: o.Cluster, TrustedDir: o.CheckpointDir})
	if err != nil {
		return err
	}
	for _, c := range rep.Clusters {
		fmt.Fprintf(o.Out, "cluster %q: %d leaves, root %v; %d rows verified, %d removed by retention, %d pending\n",
			c.Cluster, c.Size, c.Root, c.Rows, c.Retained, c.Pending)
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(o.Out, "FAIL", strings.ToValidUTF8(p.String(), "\ufffd"))
	}
	if !rep.OK() {
		return fmt.Errorf("%w: %d problems", ErrVerifyFailed, len(rep.Problems))
	}
	return nil
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
