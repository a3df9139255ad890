package tamper

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is the signed head of a cluster's log: a C2SP tlog-checkpoint
// (origin line, tree size, base64 root hash), signed as a note.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Origin is the origin line of a cluster's log: the key's name, a slash and
// the cluster, escaped (a recorded cluster name is hostile: no newline can
// reach the note).
func Origin(keyName, cluster string) string {
	return keyName + "/" + url.PathEscape(cluster)
}

// Text is the checkpoint's note text.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ParseCheckpoint reads a checkpoint note's text.
func ParseCheckpoint(text string) (Checkpoint, error) {
	var c Checkpoint
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return c, errors.New("checkpoint: want origin, size and root hash lines")
	}
	c.Origin = lines[0]
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint: bad tree size %q", lines[1])
	}
	c.Size = n
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != len(c.Root) {
		return c, fmt.Errorf("checkpoint: bad root hash %q", lines[2])
	}
	copy(c.Root[:], h)
	return c, nil
}

// OpenCheckpoint checks a signed checkpoint's signature by verifier and
// reads it.
func OpenCheckpoint(signed []byte, verifier note.Verifier) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(verifier))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	return ParseCheckpoint(n.Text)
}

// clusterDir is a cluster's directory under a checkpoint directory.
func clusterDir(dir, cluster string) string {
	return filepath.Join(dir, "cluster="+url.PathEscape(cluster))
}

// writeCheckpointFile writes a signed checkpoint to dir: a file named for
// its size under the cluster's directory, and (if latest) latest, each
// replaced whole.
func writeCheckpointFile(dir, cluster string, size int64, signed []byte, latest bool) error {
	names := []string{strconv.FormatInt(size, 10)}
	if latest {
		names = append(names, "latest")
	}
	return writeClusterFiles(dir, cluster, signed, names...)
}

// writeClusterFiles writes b to files of a cluster's directory under dir,
// each replaced whole.
func writeClusterFiles(dir, cluster string, signed []byte, names ...string) error {
	d := clusterDir(dir, cluster)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		tmp, err := os.CreateTemp(d, ".tmp-*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(signed)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(d, name))
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

// ReadTrusted reads the latest checkpoint of a cluster kept in dir (by an
// integrator's --checkpoint-dir, or copied there), or nil when there is none.
func ReadTrusted(dir, cluster string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(clusterDir(dir, cluster), "latest"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// verifiedName is the file, beside latest, of the checkpoint an
// incremental verify last verified, and starts from.
const verifiedName = "verified"

// ReadVerified reads the checkpoints of dir's clusters that a verify
// verified (cluster=<name>/verified, WriteVerified), by cluster: what
// VerifyOptions.Since starts from.
func ReadVerified(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, d := range entries {
		name, ok := strings.CutPrefix(d.Name(), "cluster=")
		if !ok || !d.IsDir() {
			continue
		}
		c, err := url.PathUnescape(name)
		if err != nil || clusterDir(dir, c) != filepath.Join(dir, d.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, d.Name(), verifiedName))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[c] = b
	}
	return out, nil
}

// WriteVerified keeps a cluster's checkpoint that a verify verified
// (ClusterReport.Checkpoint) in dir, for the next incremental verify.
func WriteVerified(dir, cluster string, signed []byte) error {
	return writeClusterFiles(dir, cluster, signed, verifiedName)
}
