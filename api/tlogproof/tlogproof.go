// Package tlogproof reads the text of a version's inclusion proof in the
// record's tamper-evident log (a C2SP tlog-proof, c2sp.org/tlog-proof), as
// store/tamper writes it: the one parser, which tamper.VerifyProof checks
// and the kubectl plugin takes a proof's state from. It checks nothing
// cryptographic: a part read here is trusted only once VerifyProof has
// checked it.
package tlogproof

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Header is a proof's first line.
const Header = "c2sp.org/tlog-proof@v1"

// BundleVersion is the version of the leaf bundle, the extra line.
const BundleVersion = 1

// Proof is a proof's parts.
type Proof struct {
	// Extra is the decoded extra line (the leaf bundle); nil when none.
	Extra []byte
	// Index is the leaf's index, Hashes the inclusion proof's hashes.
	Index  int64
	Hashes [][32]byte
	// Checkpoint is the signed checkpoint's text (a note), unchecked.
	Checkpoint []byte
}

// Parse splits a proof's text into its parts; each error names what is
// malformed.
func Parse(proof []byte) (*Proof, error) {
	header, rest, _ := bytes.Cut(proof, []byte("\n"))
	if string(header) != Header {
		return nil, fmt.Errorf("not a %s proof (first line %.40q)", Header, header)
	}
	p := &Proof{}
	var line []byte
	line, rest, _ = bytes.Cut(rest, []byte("\n"))
	if e, ok := bytes.CutPrefix(line, []byte("extra ")); ok {
		var err error
		if p.Extra, err = base64.StdEncoding.DecodeString(string(e)); err != nil {
			return nil, fmt.Errorf("proof: bad extra line: %w", err)
		}
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
	}
	is, ok := bytes.CutPrefix(line, []byte("index "))
	index, err := strconv.ParseInt(string(is), 10, 64)
	if !ok || err != nil || index < 0 || strconv.FormatInt(index, 10) != string(is) {
		return nil, fmt.Errorf("proof: bad index line %.40q", line)
	}
	p.Index = index
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, errors.New("proof: no checkpoint after the hashes")
		}
		if len(line) == 0 {
			break
		}
		h, err := base64.StdEncoding.DecodeString(string(line))
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("proof: bad hash line %.60q", line)
		}
		p.Hashes = append(p.Hashes, [32]byte(h))
	}
	p.Checkpoint = rest
	return p, nil
}

// SplitBundle splits a leaf bundle (Proof.Extra, version 1: a version
// byte, the length (uvarint) of the row's encoding, that encoding, then
// the exact stored text of the object column, empty when NULL) into the
// row's encoding and the object's text.
func SplitBundle(b []byte) (row, object []byte, err error) {
	if len(b) == 0 || b[0] != BundleVersion {
		return nil, nil, errors.New("proof: malformed leaf bundle: unknown version")
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return nil, nil, errors.New("proof: malformed leaf bundle: bad length")
	}
	return b[1+w : 1+w+int(n)], b[1+w+int(n):], nil
}

// State returns the exact logged text of the state a proof carries (the
// object column; nil when NULL), unverified: options-record verify
// --proof checks it against the signed log.
func State(proof []byte) ([]byte, error) {
	p, err := Parse(proof)
	if err != nil {
		return nil, err
	}
	if p.Extra == nil {
		return nil, errors.New("proof: no extra line: the version's row is missing")
	}
	_, object, err := SplitBundle(p.Extra)
	if err != nil || len(object) == 0 {
		return nil, err
	}
	return object, nil
}
