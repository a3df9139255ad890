package tamper

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/store/pgtest"
)

// litewitness is a real C2SP tlog-witness (filippo.io/torchwood's
// litewitness, built by test/wbuild/build.sh and cached under
// ~/.cache/options-record/litewitness), run as a process with its key in an
// ssh-agent of its own, as its README runs it.
type litewitness struct {
	url      string
	verifier note.Verifier
	vkey     string
}

// startWitness starts a litewitness named name that knows the log of
// origin, signed by logKey (a note verifier key).
func startWitness(t *testing.T, name, origin, logKey string) *litewitness {
	t.Helper()
	out, err := exec.Command("bash", "../../test/wbuild/build.sh").Output()
	if err != nil {
		pgtest.Unavailable(t, "litewitness (test/wbuild/build.sh)", "make test", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	dir := t.TempDir()
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	key := filepath.Join(dir, "witness")
	run(nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", key)
	fp := strings.Fields(run(nil, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub"))
	if len(fp) < 2 {
		t.Fatalf("ssh-keygen -l: %q", fp)
	}
	sock := filepath.Join(dir, "agent.sock")
	agent := run(nil, "ssh-agent", "-s", "-a", sock)
	var agentPID int
	for _, f := range strings.FieldsFunc(agent, func(r rune) bool { return r == ';' || r == '\n' }) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "SSH_AGENT_PID="); ok {
			agentPID, _ = strconv.Atoi(v)
		}
	}
	if agentPID == 0 {
		t.Fatalf("ssh-agent: no pid in %q", agent)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(agentPID); err == nil {
			_ = p.Kill()
		}
	})
	run([]string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", key)
	db := filepath.Join(dir, "litewitness.db")
	run(nil, filepath.Join(bin, "witnessconfig"), "-db", db, "-origin", origin, "-key", logKey)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "litewitness"), "-name", name, "-db", db,
		"-ssh-agent", sock, "-key", fp[1], "-listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	// Its verifier key is in its log, before it listens.
	w := &litewitness{}
	sc := bufio.NewScanner(stderr)
	var logged []string
	for w.vkey == "" && sc.Scan() {
		logged = append(logged, sc.Text())
		for _, f := range strings.Fields(sc.Text()) {
			if v, ok := strings.CutPrefix(f, "vkey="); ok {
				w.vkey = v
			}
		}
	}
	if w.vkey == "" {
		t.Fatalf("litewitness printed no verifier key:\n%s", strings.Join(logged, "\n"))
	}
	go func() { // keep draining its log
		for sc.Scan() {
		}
	}()
	if w.verifier, err = ParseWitnessKey(w.vkey); err != nil {
		t.Fatal(err)
	}
	port, err := listeningPort(ctx, cmd.Process.Pid)
	if err != nil {
		t.Fatalf("litewitness: %v", err)
	}
	w.url = "http://127.0.0.1:" + strconv.Itoa(port)
	return w
}

// listeningPort returns the TCP port process pid listens on: litewitness
// takes an address, not a listener, so it binds 127.0.0.1:0 itself (no
// free-port race) and its socket is found through /proc, once it has one.
func listeningPort(ctx context.Context, pid int) (int, error) {
	for ctx.Err() == nil {
		inodes := map[string]bool{}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if s, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
				inodes[strings.TrimSuffix(s, "]")] = true
			}
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// local_address rem_address st ... inode: st 0A is LISTEN.
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				_, hexPort, _ := strings.Cut(f[1], ":")
				p, err := strconv.ParseUint(hexPort, 16, 16)
				return int(p), err
			}
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return 0, errors.New("exited before it listened")
		}
		time.Sleep(10 * time.Millisecond) // poll: it has no readiness signal
	}
	return 0, ctx.Err()
}

// witnessEnv is a record whose integrator submits to real witnesses.
func witnessEnv(t *testing.T, n int) (*env, []*litewitness) {
	t.Helper()
	e := newEnv(t)
	vkey := verifierKey(t, e)
	var ws []*litewitness
	var opts []Witness
	for i := range n {
		w := startWitness(t, fmt.Sprintf("witness.example/w%d", i), Origin(keyName, "default"), vkey)
		ws = append(ws, w)
		opts = append(opts, Witness{URL: w.url, Verifier: w.verifier})
	}
	in, err := NewIntegrator(IntegratorOptions{Pool: e.st.Pool(), Signer: e.signer, Checkpoints: e.bucket,
		MaxLeaves: 7, Witnesses: opts})
	if err != nil {
		t.Fatal(err)
	}
	e.in = in
	return e, ws
}

// verifierKey is the env's log verifier key, as text (what an operator
// gives a witness): rebuilt from a fresh key pair, as newKey makes none.
func verifierKey(t *testing.T, e *env) string {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, keyName)
	if err != nil {
		t.Fatal(err)
	}
	e.signer, err = note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	e.verifier, err = note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return vkey
}

func (e *env) verifyWitnessed(ws []note.Verifier, quorum int) Report {
	e.t.Helper()
	rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Trusted: e.bucket,
		Witnesses: ws, WitnessQuorum: quorum})
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

func latest(t *testing.T, e *env) []byte {
	t.Helper()
	b, err := ReadTrusted(context.Background(), e.bucket, "default")
	if err != nil || b == nil {
		t.Fatalf("latest checkpoint: %q, %v", b, err)
	}
	return b
}

// TestWitnessCosigns: two real witnesses cosign each new checkpoint (from
// an empty log, then with a consistency proof), the cosignatures are kept
// with it, and verify counts them.
func TestWitnessCosigns(t *testing.T) {
	e, ws := witnessEnv(t, 2)
	vs := []note.Verifier{ws[0].verifier, ws[1].verifier}
	now := time.Now()
	e.write(e.batch("default", now, 4))
	e.integrate()
	if b, _ := ReadTrusted(context.Background(), e.bucket, "default"); b != nil {
		t.Fatalf("latest before the witnesses cosigned: %q", b)
	}
	e.in.CosignAll(context.Background())
	e.write(e.batch("default", now, 5))
	e.integrate()
	e.in.CosignAll(context.Background())
	b := latest(t, e)
	n, err := note.Open(b, note.VerifierList(append([]note.Verifier{e.verifier}, vs...)...))
	if err != nil {
		t.Fatalf("latest: %v\n%s", err, b)
	}
	if len(n.Sigs) != 3 {
		t.Fatalf("latest has %d verified signatures, want the log's and two cosignatures:\n%s", len(n.Sigs), b)
	}
	if cp, _ := ParseCheckpoint(n.Text); cp.Size != 18 {
		t.Fatalf("latest is of size %d, want 18", cp.Size)
	}
	if rep := e.verifyWitnessed(vs, 0); !rep.OK() || rep.Clusters[0].Cosigned != 2 {
		t.Fatalf("verify: cosigned %d: %s", rep.Clusters[0].Cosigned, problems(rep))
	}
	if c := e.in.WitnessConflicts(); c != 0 {
		t.Fatalf("%d witness conflicts", c)
	}
}

// TestWitnessAfterRestart: a restarted integrator submits the newest
// checkpoint of an idle log (no row arrives to make a new one).
func TestWitnessAfterRestart(t *testing.T) {
	e, ws := witnessEnv(t, 1)
	e.write(e.batch("default", time.Now(), 2))
	e.integrate()
	if b, _ := ReadTrusted(context.Background(), e.bucket, "default"); b != nil {
		t.Fatalf("latest before the witness cosigned: %q", b)
	}
	in, err := NewIntegrator(IntegratorOptions{Pool: e.st.Pool(), Signer: e.signer, Checkpoints: e.bucket,
		Witnesses: []Witness{{URL: ws[0].url, Verifier: ws[0].verifier}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.LoadUnwitnessed(context.Background()); err != nil {
		t.Fatal(err)
	}
	in.CosignAll(context.Background())
	if rep := e.verifyWitnessed([]note.Verifier{ws[0].verifier}, 1); !rep.OK() || rep.Clusters[0].TrustedSize != 4 {
		t.Fatalf("verify: trusted %d leaves: %s", rep.Clusters[0].TrustedSize, problems(rep))
	}
}

// TestWitnessRefusesRollback: a log rolled back after a witness cosigned a
// larger tree is refused by the witness (409, its size larger), counted,
// and latest stays the cosigned checkpoint, which verify holds the log to.
func TestWitnessRefusesRollback(t *testing.T) {
	e, ws := witnessEnv(t, 1)
	now := time.Now()
	e.write(e.batch("default", now, 4))
	e.integrate()
	e.write(e.batch("default", now, 4))
	e.integrate()
	e.in.CosignAll(context.Background())
	before := latest(t, e)
	// A restored backup: the second pass's rows and segment are gone.
	e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
		SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= 7)`)
	e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
		SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= 7)`)
	e.exec(`DELETE FROM log_segments WHERE first_index >= 7`)
	e.write(e.batch("default", now, 1))
	e.integrate()
	// A new integrator (a restarted replica) knows nothing of the witness.
	in, err := NewIntegrator(IntegratorOptions{Pool: e.st.Pool(), Signer: e.signer, Checkpoints: e.bucket,
		Witnesses: []Witness{{URL: ws[0].url, Verifier: ws[0].verifier}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []*Integrator{e.in, in} {
		in.unwitnessed = maps.Clone(e.in.unwitnessed)
		in.CosignAll(context.Background())
		if c := in.WitnessConflicts(); c != 1 {
			t.Errorf("%d witness conflicts, want 1", c)
		}
	}
	if b := latest(t, e); !bytes.Equal(b, before) {
		t.Fatalf("latest changed to a checkpoint the witness refused:\n%s", b)
	}
	rep := e.verifyWitnessed([]note.Verifier{ws[0].verifier}, 1)
	if got := problems(rep); !strings.Contains(got, "fewer than the 16 of the trusted checkpoint: it was rolled back") {
		t.Fatalf("verify: %s", got)
	}
}

// TestWitnessRefusesFork: a log rewritten after a witness cosigned it, then
// grown past the size the witness knows, gets a consistency proof the
// witness rejects (422): counted, and latest stays the cosigned checkpoint.
func TestWitnessRefusesFork(t *testing.T) {
	e, _ := witnessEnv(t, 1)
	now := time.Now()
	e.write(e.batch("default", now, 4))
	e.integrate()
	e.write(e.batch("default", now, 4))
	e.integrate()
	e.in.CosignAll(context.Background())
	before := latest(t, e)
	e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
		SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= 7)`)
	e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
		SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= 7)`)
	e.exec(`DELETE FROM log_segments WHERE first_index >= 7`)
	e.write(e.batch("default", now, 6)) // 7 + 12 leaves: past the 16 cosigned
	e.integrate()
	e.in.CosignAll(context.Background())
	if c := e.in.WitnessConflicts(); c != 1 {
		t.Errorf("%d witness conflicts, want 1", c)
	}
	if b := latest(t, e); !bytes.Equal(b, before) {
		t.Fatalf("latest changed to a checkpoint the witness refused:\n%s", b)
	}
	rep := e.verify(true)
	if got := problems(rep); !strings.Contains(got, "does not extend the trusted checkpoint of 16") {
		t.Fatalf("verify: %s", got)
	}
}

// TestVerifyCosignatureQuorum: verify fails when the trusted checkpoint
// lacks a cosignature the quorum needs, or carries a forged one.
func TestVerifyCosignatureQuorum(t *testing.T) {
	e, ws := witnessEnv(t, 2)
	vs := []note.Verifier{ws[0].verifier, ws[1].verifier}
	e.write(e.batch("default", time.Now(), 3))
	e.integrate()
	e.in.CosignAll(context.Background())
	b := latest(t, e)
	if rep := e.verifyWitnessed(vs, 2); !rep.OK() {
		t.Fatalf("before: %s", problems(rep))
	}
	sigs := strings.SplitAfter(string(b[bytes.Index(b, []byte("\n\n"))+2:]), "\n")
	// sigs: the log's, the two cosignatures (in the witnesses' order), "".
	if len(sigs) != 4 {
		t.Fatalf("want 3 signature lines:\n%s", b)
	}
	text := string(b[:bytes.Index(b, []byte("\n\n"))+2])
	path := filepath.Join(e.dir, "cluster=default", "latest")
	for _, tc := range []struct {
		name, note string
		quorum     int
		want       string
	}{
		{"one missing", text + sigs[0] + sigs[1], 2, "cosigned by 1 of the witnesses, fewer than the quorum of 2"},
		{"one missing, quorum of one", text + sigs[0] + sigs[2], 1, ""},
		{"none", text + sigs[0], 1, "cosigned by 0 of the witnesses, fewer than the quorum of 1"},
		{"forged", text + sigs[0] + sigs[1] + forge(t, sigs[2]), 1, "invalid signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.note), 0o644); err != nil {
				t.Fatal(err)
			}
			rep := e.verifyWitnessed(vs, tc.quorum)
			got := problems(rep)
			if tc.want == "" {
				if !rep.OK() {
					t.Fatalf("verify: %s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want a problem saying %q; got:\n%s", tc.want, got)
			}
		})
	}
}

// forge flips a bit of a signature line's signature (after its key hash
// and timestamp).
func forge(t *testing.T, line string) string {
	t.Helper()
	i := strings.LastIndexByte(line, ' ')
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line[i+1:]))
	if err != nil || len(sig) < 20 {
		t.Fatalf("signature line %q: %v", line, err)
	}
	sig[len(sig)-1] ^= 1
	return line[:i+1] + base64.StdEncoding.EncodeToString(sig) + "\n"
}
