package tamper

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

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

// A checkpoint bucket (an integrator's --checkpoint-dir or --checkpoint-url,
// outside the database) keeps, for each cluster, objects under
// cluster=<name>/, the name escaped: <size> for each signed checkpoint,
// latest for the newest (the trusted one), verified for the one an
// incremental verify last verified. Each is written whole (a file renamed
// into place, an object put in one request): no reader sees part of one.

// clusterPrefix is a cluster's prefix in a checkpoint bucket.
func clusterPrefix(cluster string) string {
	return "cluster=" + url.PathEscape(cluster) + "/"
}

// maxCheckpointBytes caps what is read of one checkpoint object: a note
// with its signatures and cosignatures is well under a kilobyte, and the
// bucket is outside the database, not trusted to be small.
const maxCheckpointBytes = 1 << 20

// writeTimeout bounds writing a checkpoint whose log is committed: it is
// written even when the caller is stopping.
const writeTimeout = 30 * time.Second

// writeCheckpointFile writes a signed checkpoint to b: an object named for
// its size under the cluster's prefix, and (if latest) latest, each
// replaced whole.
func writeCheckpointFile(ctx context.Context, b *blob.Bucket, cluster string, size int64, signed []byte, latest bool) error {
	names := []string{strconv.FormatInt(size, 10)}
	if latest {
		names = append(names, "latest")
	}
	return writeClusterFiles(ctx, b, cluster, signed, names...)
}

// writeClusterFiles writes signed to objects of a cluster's prefix in b,
// each replaced whole.
func writeClusterFiles(ctx context.Context, b *blob.Bucket, cluster string, signed []byte, names ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	for _, name := range names {
		if err := writeObject(ctx, b, clusterPrefix(cluster)+name, signed); err != nil {
			return err
		}
	}
	return nil
}

// checkpointFileMode is a checkpoint file's mode in a directory: public
// and signed, writable by its owner only, whatever the umask (fileblob
// creates 0666 less the umask).
const checkpointFileMode = 0o644

// writeObject writes b's object key whole. In a directory (fileblob) the
// temporary file is synced before it is renamed into place, so a crash
// leaves the old checkpoint or the new one, never an empty file.
func writeObject(ctx context.Context, b *blob.Bucket, key string, data []byte) error {
	var file *os.File
	// Cancelled before Close, a write is abandoned, not half kept.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The type is given: none is sniffed from the (hostile) content.
	w, err := b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "text/plain; charset=utf-8",
		BeforeWrite: func(as func(any) bool) error {
			if as(&file) {
				return file.Chmod(checkpointFileMode)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if err == nil && file != nil {
		err = file.Sync()
	}
	if err != nil {
		cancel()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// readClusterFile reads a cluster's object name from b, or nil when there
// is none.
func readClusterFile(ctx context.Context, b *blob.Bucket, cluster, name string) ([]byte, error) {
	r, err := b.NewReader(ctx, clusterPrefix(cluster)+name, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxCheckpointBytes+1))
	if err == nil && len(out) > maxCheckpointBytes {
		err = fmt.Errorf("%s: larger than %d bytes", clusterPrefix(cluster)+name, maxCheckpointBytes)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadTrusted reads the latest checkpoint of a cluster kept in b (by an
// integrator's --checkpoint-dir or --checkpoint-url, or copied there), or
// nil when there is none.
func ReadTrusted(ctx context.Context, b *blob.Bucket, cluster string) ([]byte, error) {
	return readClusterFile(ctx, b, cluster, "latest")
}

// verifiedName is the object, beside latest, of the checkpoint an
// incremental verify last verified, and starts from.
const verifiedName = "verified"

// bucketClusters lists the clusters with a prefix in b that holds name.
// A prefix that does not unescape to a cluster (or not to the one it
// is written as) is not one of them.
func bucketClusters(ctx context.Context, b *blob.Bucket, name string) ([]string, error) {
	var out []string
	it := b.List(&blob.ListOptions{Prefix: "cluster=", Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		esc, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, "cluster="), "/")
		if !ok || !obj.IsDir {
			continue
		}
		c, err := url.PathUnescape(esc)
		if err != nil || clusterPrefix(c) != obj.Key {
			continue
		}
		ok, err = b.Exists(ctx, obj.Key+name)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
}

// ReadVerified reads the checkpoints of b's clusters that a verify
// verified (cluster=<name>/verified, WriteVerified), by cluster: what
// VerifyOptions.Since starts from.
func ReadVerified(ctx context.Context, b *blob.Bucket) (map[string][]byte, error) {
	clusters, err := bucketClusters(ctx, b, verifiedName)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, c := range clusters {
		v, err := readClusterFile(ctx, b, c, verifiedName)
		if err != nil {
			return nil, err
		}
		if v != nil {
			out[c] = v
		}
	}
	return out, nil
}

// WriteVerified keeps a cluster's checkpoint that a verify verified
// (ClusterReport.Checkpoint) in b, for the next incremental verify.
func WriteVerified(ctx context.Context, b *blob.Bucket, cluster string, signed []byte) error {
	return writeClusterFiles(ctx, b, cluster, signed, verifiedName)
}
