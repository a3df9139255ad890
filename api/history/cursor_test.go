package history

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/store"
)

// noReader is a Reader for tests that read nothing.
type noReader struct{ Reader }

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// TestCursors: a cursor comes back as it was, tells nothing of the row it
// stops at (which the caller may not be allowed to read), is refused when
// altered, and is accepted by another replica with the same key only.
func TestCursors(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	server := func(key []byte) *Service {
		s, err := New(Options{Reader: noReader{}, Authorizer: allowAll{}, CursorKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, other := server(key), server(key), server(nil)
	c := store.Cursor{At: time.Date(2026, 11, 21, 10, 0, 0, 123456000, time.UTC), UID: "uid-of-a-secret-in-payments", Key: []byte{1, 2, 3}}
	enc := a.encodeCursor(c)
	param := func(s *Service, v string) (*store.Cursor, error) { return s.openCursor(v) }
	got, err := param(b, enc)
	if err != nil || !got.At.Equal(c.At) || got.UID != c.UID || string(got.Key) != string(c.Key) {
		t.Errorf("round trip through a replica with the same key: %+v, %v", got, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(enc)
	if bytes.Contains(raw, []byte("uid-of")) || bytes.Contains(raw, []byte("2026")) {
		t.Errorf("the cursor shows the row it stops at: %q", raw)
	}
	raw[len(raw)-1] ^= 1
	if _, err := param(a, base64.RawURLEncoding.EncodeToString(raw)); err == nil {
		t.Error("an altered cursor was accepted")
	}
	if _, err := param(other, enc); err == nil {
		t.Error("a cursor sealed with another key was accepted")
	}
	plain, _ := json.Marshal(map[string]string{"t": "2026-11-21T10:00:00Z", "k": "01"})
	if _, err := param(a, base64.RawURLEncoding.EncodeToString(plain)); err == nil {
		t.Error("a forged cursor was accepted")
	}
}
