// Package digest is the one digest that pins what a caller reviewed: a
// recorded state (a version's stored object, as the record holds it) and a
// plan's steps (their JSON encoding) are each pinned by "sha256:" and the
// hex SHA-256 of their bytes, and compared in constant time.
//
// It has no I/O and reaches nothing outside the standard library.
package digest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// prefix names the hash of a digest.
const prefix = "sha256:"

// Of is the digest of b.
func Of(b []byte) string {
	sum := sha256.Sum256(b)
	return prefix + hex.EncodeToString(sum[:])
}

// Equal compares digests in constant time.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
