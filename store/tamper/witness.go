package tamper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Witness is a C2SP tlog-witness (https://c2sp.org/tlog-witness) the
// integrator submits each cluster's checkpoints to: it checks that the log
// only grew since the last checkpoint it saw and cosigns (C2SP
// tlog-cosignature, cosignature/v1: a timestamped Ed25519 signature).
type Witness struct {
	// URL is the witness's prefix: checkpoints are posted to
	// URL/add-checkpoint.
	URL string
	// Verifier checks its cosignatures: a cosignature/v1 verifier key.
	Verifier note.Verifier
}

// ParseWitnessKey reads a witness's cosignature/v1 verifier key
// (name+hash+base64 of 0x04 and the Ed25519 public key, as a witness such
// as litewitness prints it).
func ParseWitnessKey(vkey string) (note.Verifier, error) {
	vkey = strings.TrimSpace(vkey)
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("witness key %q: not a cosignature/v1 verifier key: %w", vkey, err)
	}
	// The library takes an Ed25519 note key (0x01) as the same key's
	// cosignature/v1 key, and does not check the key hash written in the
	// key: a key whose written hash is not its own (a log's key given for
	// a witness's, a typo) is refused.
	_, rest, _ := strings.Cut(vkey, "+")
	if hash16, _, _ := strings.Cut(rest, "+"); hash16 != fmt.Sprintf("%08x", v.KeyHash()) {
		return nil, fmt.Errorf("witness key %q: not a cosignature/v1 verifier key: its key hash is %08x", vkey, v.KeyHash())
	}
	return v, nil
}

// ParseWitness reads URL=VERIFIERKEY: the witness's URL prefix (http or
// https, with no "=" in it) and its cosignature/v1 verifier key.
func ParseWitness(s string) (Witness, error) {
	raw, vkey, ok := strings.Cut(s, "=")
	if !ok {
		return Witness{}, fmt.Errorf("witness %q: want URL=VERIFIERKEY", s)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Witness{}, fmt.Errorf("witness %q: want an http(s) URL before the =", s)
	}
	v, err := ParseWitnessKey(vkey)
	if err != nil {
		return Witness{}, err
	}
	return Witness{URL: strings.TrimSuffix(raw, "/"), Verifier: v}, nil
}

// ErrWitnessConflict is a witness's refusal of a checkpoint that does not
// extend the newest it cosigned for the log: a log rolled back, truncated
// or forked (409 with a larger size, or a consistency proof it rejects).
var ErrWitnessConflict = errors.New("the witness refuses a log that does not extend what it cosigned")

// witnessConflict is a 409: the witness knows another size of the log.
type witnessConflict struct{ size int64 }

func (e *witnessConflict) Error() string {
	return fmt.Sprintf("the witness knows a tree of size %d", e.size)
}

// addCheckpoint posts a signed checkpoint with the consistency proof from
// old to the witness, and returns its cosignature lines, checked.
func addCheckpoint(ctx context.Context, hc *http.Client, w Witness, old int64, proof tlog.TreeProof, signed []byte) ([]byte, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	for _, h := range proof {
		body.WriteString(h.String() + "\n")
	}
	body.WriteString("\n")
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", &body)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("409 with a body that is no tree size: %q", truncate(b))
		}
		return nil, &witnessConflict{size: n}
	case http.StatusUnprocessableEntity:
		return nil, fmt.Errorf("%w: it rejects the consistency proof from size %d (%q)", ErrWitnessConflict, old, truncate(b))
	default:
		return nil, fmt.Errorf("%s: %q", resp.Status, truncate(b))
	}
	cosig := b
	if len(cosig) == 0 || cosig[len(cosig)-1] != '\n' {
		return nil, fmt.Errorf("cosignature: %q is not signature lines", truncate(b))
	}
	// Check the lines against the witness's key: the note with them
	// opens, and the witness's signature is among those verified.
	n, err := note.Open(append(bytes.Clone(signed), cosig...), note.VerifierList(w.Verifier))
	if err != nil {
		return nil, fmt.Errorf("cosignature: %w", err)
	}
	if !signedBy(n, w.Verifier) {
		return nil, errors.New("cosignature: none by the witness's key")
	}
	return cosig, nil
}

func signedBy(n *note.Note, v note.Verifier) bool {
	for _, s := range n.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			return true
		}
	}
	return false
}

func truncate(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// witnessAhead is a witness that cosigned a larger tree of the log than
// the checkpoint submitted: another replica's newer checkpoint (the
// replicas take turns integrating a cluster), or a log rolled back since.
type witnessAhead struct{ size int64 }

func (e *witnessAhead) Error() string {
	return fmt.Sprintf("the witness cosigned a tree of size %d", e.size)
}

// cosignTries bounds how often a cluster's cosigning moves on to the
// database's newer checkpoint in one round (other replicas may integrate
// and cosign meanwhile): what is left waits for the next round.
const cosignTries = 3

// cosign submits a cluster's signed checkpoint to each witness (from the
// size each last cosigned, learnt from a 409) and returns the checkpoint
// submitted and the cosignature lines of those that cosigned it. A witness
// that cosigned a larger tree (another replica's checkpoint) makes the
// cluster's newest checkpoint in the database the one submitted, with a
// consistency proof from that size, so the witness itself checks that the
// log grew. Each failure is logged; a witness that refuses the log as not
// extending what it cosigned (a larger tree than the database's log has,
// or a consistency proof it rejects) is counted (WitnessConflicts).
func (in *Integrator) cosign(ctx context.Context, cluster string, cp signedCheckpoint) (signedCheckpoint, []byte) {
	for try := 1; ; try++ {
		var out []byte
		var ahead int64 // the largest tree a witness cosigned, past cp
		for _, w := range in.o.Witnesses {
			cosig, err := in.cosignOne(ctx, w, cluster, cp.size, cp.signed)
			var a *witnessAhead
			if errors.As(err, &a) {
				ahead = max(ahead, a.size)
				continue
			}
			if err != nil {
				if errors.Is(err, ErrWitnessConflict) {
					in.conflicts.Add(1)
				}
				in.o.Logger.Error("witness", "witness", w.URL, "cluster", cluster, "size", cp.size, "err", err)
				continue
			}
			out = append(out, cosig...)
		}
		if ahead == 0 {
			return cp, out
		}
		newest, err := in.newestCheckpoint(ctx, cluster)
		if err != nil {
			in.o.Logger.Error("witness: the newest checkpoint", "cluster", cluster, "err", err)
			return cp, out
		}
		if newest.size <= cp.size || try == cosignTries {
			// Every witness ahead of the database's log is a rollback;
			// one ahead of cp only still racing replicas waits.
			in.countAhead(cluster, newest.size)
			return cp, out
		}
		cp = newest
		in.mu.Lock()
		if u, ok := in.unwitnessed[cluster]; ok && u.size < cp.size {
			in.unwitnessed[cluster] = cp
		}
		in.mu.Unlock()
	}
}

// countAhead counts and logs each witness that cosigned a larger tree of
// the cluster's log than the database holds (size leaves): the log was
// rolled back or truncated since.
func (in *Integrator) countAhead(cluster string, size int64) {
	for _, w := range in.o.Witnesses {
		key := w.URL + "\x00" + cluster
		in.mu.Lock()
		old := in.witnessed[key]
		in.mu.Unlock()
		if old <= size {
			continue
		}
		in.conflicts.Add(1)
		in.o.Logger.Error("witness", "witness", w.URL, "cluster", cluster, "size", size,
			"err", fmt.Errorf("%w: it cosigned a tree of size %d, the log has %d leaves (rolled back or truncated)", ErrWitnessConflict, old, size))
	}
}

// newestCheckpoint reads a cluster's newest signed checkpoint from the
// database (not trusted: a witness checks it extends what it cosigned).
func (in *Integrator) newestCheckpoint(ctx context.Context, cluster string) (signedCheckpoint, error) {
	var cp signedCheckpoint
	var signed string
	err := in.o.Pool.QueryRow(ctx, `
SELECT tree_size, checkpoint FROM log_segments WHERE cluster = $1 ORDER BY first_index DESC LIMIT 1`, cluster).Scan(&cp.size, &signed)
	if errors.Is(err, pgx.ErrNoRows) {
		return cp, nil
	}
	cp.signed = []byte(signed)
	return cp, err
}

// cosignOne submits a checkpoint of size to one witness. A witness that
// cosigned a larger tree (as this integrator knows, or as its 409 says)
// is a *witnessAhead, its size kept in witnessed.
func (in *Integrator) cosignOne(ctx context.Context, w Witness, cluster string, size int64, signed []byte) ([]byte, error) {
	key := w.URL + "\x00" + cluster
	in.mu.Lock()
	old := in.witnessed[key]
	in.mu.Unlock()
	for try := 0; ; try++ {
		if old > size {
			return nil, &witnessAhead{size: old}
		}
		proof, err := in.consistencyProof(ctx, cluster, size, old)
		if err != nil {
			return nil, err
		}
		cosig, err := addCheckpoint(ctx, in.o.HTTPClient, w, old, proof, signed)
		var c *witnessConflict
		if errors.As(err, &c) {
			old = c.size // and try again from there, once
			in.mu.Lock()
			in.witnessed[key] = old
			in.mu.Unlock()
			if try == 0 || old > size {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		in.mu.Lock()
		in.witnessed[key] = size
		in.mu.Unlock()
		return cosig, nil
	}
}

// consistencyProof proves, from the stored hashes, that the tree of size
// extends the tree of size old.
func (in *Integrator) consistencyProof(ctx context.Context, cluster string, size, old int64) (tlog.TreeProof, error) {
	if old == 0 || old == size {
		return nil, nil
	}
	var p tlog.TreeProof
	err := pgx.BeginTxFunc(ctx, in.o.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		p, err = tlog.ProveTree(size, old, &storedHashes{ctx: ctx, q: tx, cluster: cluster, mem: map[int64]tlog.Hash{}})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("consistency proof from %d to %d: %w", old, size, err)
	}
	return p, nil
}

// CheckCosignatures counts the distinct witnesses whose cosignature of a
// signed checkpoint verifies. A signature line by a witness's key that does
// not verify (forged, or of another checkpoint) is an error.
func CheckCosignatures(signed []byte, witnesses []note.Verifier) (int, error) {
	if len(witnesses) == 0 {
		return 0, nil
	}
	n, err := note.Open(signed, note.VerifierList(witnesses...))
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cosignature: %w", err)
	}
	count := 0
	for _, w := range witnesses {
		if signedBy(n, w) {
			count++
		}
	}
	return count, nil
}

// newestCheckpointsSQL reads each cluster's newest signed checkpoint.
const newestCheckpointsSQL = `
SELECT DISTINCT ON (cluster) cluster, tree_size, checkpoint FROM log_segments ORDER BY cluster, first_index DESC`

// LoadUnwitnessed takes each cluster's newest signed checkpoint from the
// database as not yet cosigned, so that CosignAll submits it even when no
// row arrives after a restart (an idle log's last checkpoint would
// otherwise wait for the next). What the database holds is not trusted:
// the witnesses check the log's signature and that it extends what they
// cosigned, and the integrator keeps only the cosignatures it checked.
func (in *Integrator) LoadUnwitnessed(ctx context.Context) error {
	rows, err := in.o.Pool.Query(ctx, newestCheckpointsSQL)
	if err != nil {
		return err
	}
	var cluster, signed string
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&cluster, &size, &signed}, func() error {
		in.mu.Lock()
		if _, ok := in.unwitnessed[cluster]; !ok {
			in.unwitnessed[cluster] = signedCheckpoint{size: size, signed: []byte(signed)}
		}
		in.mu.Unlock()
		return nil
	})
	return err
}
