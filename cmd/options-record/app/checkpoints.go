package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// The object stores' drivers register their schemes in
// checkpoints_{s3,gcs,azure}.go; a build tag leaves one out (its SDK is
// most of the binary's growth): options_record_no_s3 (about 12 MB),
// options_record_no_gcs and options_record_no_azure (together about 33
// MB). A URL of a scheme left out is an error naming it.

// openCheckpoints opens where the signed checkpoints are kept outside the
// database: --checkpoint-dir (a directory) or --checkpoint-url (an object
// store: s3://, gs://, azblob://, or file:///path, the same as a
// directory), at most one of them; nil when neither is given. create
// makes a missing directory (the integrator writes it); without it, a
// directory that does not exist or cannot be read is an error naming it
// (a mistyped path must not skip verify's check). The object stores'
// credentials come from their SDKs' standard environment
// (docs/security.md). where names it for messages, with no credential.
func openCheckpoints(ctx context.Context, dir, rawURL string, create bool) (b *blob.Bucket, where string, err error) {
	switch {
	case dir != "" && rawURL != "":
		return nil, "", errors.New("--checkpoint-dir and --checkpoint-url name the same thing: give one")
	case dir == "" && rawURL == "":
		return nil, "", nil
	case rawURL != "":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("--checkpoint-url: %w", err)
		}
		where = u.Redacted()
		if u.Scheme != "file" {
			if b, err = blob.OpenBucket(ctx, rawURL); err != nil {
				return nil, "", fmt.Errorf("--checkpoint-url %s: %w", where, err)
			}
			return b, where, nil
		}
		if u.Host != "" && u.Host != "localhost" || u.Path == "" {
			return nil, "", fmt.Errorf("--checkpoint-url %s: want file:///PATH", where)
		}
		dir = u.Path
	default:
		where = dir
	}
	if !create {
		// fileblob skips what it cannot read: a directory it lists must
		// be readable.
		if _, err := os.ReadDir(dir); err != nil {
			return nil, "", fmt.Errorf("checkpoints: %w", err)
		}
	}
	// The layout of a checkpoint directory: no attribute file beside each
	// checkpoint, and each written to a temporary file beside its name
	// and renamed (whole; on the same file system).
	b, err = fileblob.OpenBucket(dir, &fileblob.Options{Metadata: fileblob.MetadataDontWrite, NoTempDir: true, CreateDir: create, DirFileMode: 0o755})
	if err != nil {
		return nil, "", fmt.Errorf("checkpoints %s: %w", dir, err)
	}
	return b, where, nil
}
