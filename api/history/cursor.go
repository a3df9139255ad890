package history

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/store"
)

// cursor is the page cursor: where the previous page stopped, which may be a
// row the caller may not read. It is sealed (AES-GCM), so it tells nothing
// of that row.
type cursor struct {
	At  time.Time `json:"t"`
	UID string    `json:"u,omitempty"`
	Key string    `json:"k"`
}

// newCursorAEAD keys the cursor seal: key (32 bytes; replicas that share it
// accept each other's cursors), or a random one for this process.
func newCursorAEAD(key []byte) (cipher.AEAD, error) {
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("restore: cursor key: %w", err)
		}
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("restore: cursor key: %w", err)
	}
	return cipher.NewGCM(block)
}

func (s *Service) encodeCursor(c store.Cursor) string {
	b, _ := json.Marshal(cursor{At: c.At.UTC(), UID: c.UID, Key: hex.EncodeToString(c.Key)})
	nonce := make([]byte, s.cursors.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.cursors.Seal(nonce, nonce, b, nil))
}

// openCursor opens a cursor this service sealed ("" is the first page).
func (s *Service) openCursor(v string) (*store.Cursor, error) {
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: cursor=%q is not a cursor this API returned (pass the next value of a page as is)", errs.ErrInvalid, v)
	sealed, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(sealed) < s.cursors.NonceSize() {
		return nil, bad
	}
	n := s.cursors.NonceSize()
	b, err := s.cursors.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, bad
	}
	var c cursor
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.At.IsZero() {
		return nil, bad
	}
	key, err := hex.DecodeString(c.Key)
	if err != nil || len(key) == 0 {
		return nil, bad
	}
	return &store.Cursor{At: c.At, UID: c.UID, Key: key}, nil
}
