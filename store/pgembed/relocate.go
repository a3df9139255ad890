package pgembed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// relocatedRoot holds the clusters of data directories the server account
// cannot reach: as root in a private home (/root is 0700), the postgres
// account could not enter DataDir.
const relocatedRoot = "/var/lib/options-record/pgembed"

// locationFile, in DataDir, names where the cluster of a relocated DataDir lives.
const locationFile = "pgembed-location"

// relocateIfUnreachable moves the cluster (and the socket directory) of a
// DataDir the server account cannot reach to a directory under
// relocatedRoot named after DataDir, so the same DataDir always finds the
// same cluster. DataDir itself stays the caller's: it keeps a note of where
// the cluster is.
func (s *Server) relocateIfUnreachable() error {
	if s.account.cred == nil {
		return nil // running as ourselves: nothing to reach
	}
	existing := s.dataDir
	for {
		if _, err := os.Stat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pgembed: data dir: %w", err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	if s.account.checkReachable(existing) == nil {
		return nil
	}
	abs, err := filepath.Abs(s.dataDir)
	if err != nil {
		return fmt.Errorf("pgembed: data dir: %w", err)
	}
	sum := sha256.Sum256([]byte(abs))
	moved := filepath.Join(relocatedRoot, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(relocatedRoot, 0o755); err != nil {
		return fmt.Errorf("pgembed: %s is not reachable by the %q account, and %s cannot be created: %w", s.dataDir, s.account.name, relocatedRoot, err)
	}
	// A cluster there without the note in DataDir belonged to a DataDir that
	// was removed (make clean): removing the data dir removes its record.
	if _, err := os.Stat(filepath.Join(s.dataDir, locationFile)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(moved); err == nil {
			s.log.Info("pgembed: removing the cluster of a removed data dir", "data_dir", s.dataDir, "cluster_dir", moved)
			if err := os.RemoveAll(moved); err != nil {
				return fmt.Errorf("pgembed: remove stale cluster %s: %w", moved, err)
			}
		}
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return fmt.Errorf("pgembed: data dir: %w", err)
	}
	note := fmt.Sprintf("The PostgreSQL cluster of this directory is in %s:\nthe %q account that runs PostgreSQL (which refuses to run as root) cannot reach %s.\nRemoving this directory removes that cluster on the next start.\n", moved, s.account.name, existing)
	if err := os.WriteFile(filepath.Join(s.dataDir, locationFile), []byte(note), 0o644); err != nil {
		return fmt.Errorf("pgembed: data dir: %w", err)
	}
	s.log.Info("pgembed: the data dir is not reachable by the server account; the cluster lives elsewhere",
		"data_dir", s.dataDir, "cluster_dir", moved, "account", s.account.name)
	s.dataDir = moved
	s.pgdata = filepath.Join(moved, "pgdata")
	return nil
}
