package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSecretDigester(t *testing.T) {
	k1, err := NewSecretDigester([]byte("0123456789abcdef-key-one"))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := NewSecretDigester([]byte("0123456789abcdef-key-two"))
	if err != nil {
		t.Fatal(err)
	}
	plain := sha256.Sum256([]byte("hunter2"))
	db := SecretPlace{"prod-eu", "shop", "db"}
	at := func(d *SecretDigester, p SecretPlace, field string, v string, b64 bool) any {
		return d.at(p).value(field, v, b64)
	}
	tests := []struct {
		name string
		a, b any
		same bool
	}{
		{"same key, place and value", at(k1, db, "pw", "hunter2", false), at(k1, db, "pw", "hunter2", false), true},
		{"data (base64) and stringData of one value", at(k1, db, "pw", "aHVudGVyMg==", true), at(k1, db, "pw", "hunter2", false), true},
		{"same key, other value", at(k1, db, "pw", "hunter2", false), at(k1, db, "pw", "hunter3", false), false},
		{"other key, same value", at(k1, db, "pw", "hunter2", false), at(k2, db, "pw", "hunter2", false), false},
		// Bound to their place: equal values elsewhere do not link.
		{"other field", at(k1, db, "pw", "hunter2", false), at(k1, db, "pw2", "hunter2", false), false},
		{"other Secret", at(k1, db, "pw", "hunter2", false), at(k1, SecretPlace{"prod-eu", "shop", "db2"}, "pw", "hunter2", false), false},
		{"other namespace", at(k1, db, "pw", "hunter2", false), at(k1, SecretPlace{"prod-eu", "shop2", "db"}, "pw", "hunter2", false), false},
		{"other cluster", at(k1, db, "pw", "hunter2", false), at(k1, SecretPlace{"prod-us", "shop", "db"}, "pw", "hunter2", false), false},
		{"no ambiguity in the place's fields", at(k1, SecretPlace{"a", "bc", "d"}, "e", "x", false), at(k1, SecretPlace{"ab", "c", "d"}, "e", "x", false), false},
		{"keyed vs the plain SHA-256 a dictionary holds", at(k1, db, "pw", "hunter2", false), PlainDigestPrefix + hex.EncodeToString(plain[:]), false},
		{"no key: plain SHA-256", at(nil, db, "pw", "hunter2", false), PlainDigestPrefix + hex.EncodeToString(plain[:]), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.a == tc.b) != tc.same {
				t.Errorf("%v vs %v: equal = %v, want %v", tc.a, tc.b, tc.a == tc.b, tc.same)
			}
		})
	}
	if s, _ := at(k1, db, "pw", "x", false).(string); !strings.HasPrefix(s, KeyedDigestPrefix) {
		t.Errorf("keyed digest %q lacks %q", s, KeyedDigestPrefix)
	}
	if _, err := NewSecretDigester([]byte("short")); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

// A digest recorded from a Secret value anyone can choose is never a key the
// sink uses: the cursor key (and any other derived key) is not the digest of
// its own label, or of anything else a tenant can record, at any place.
func TestDerivedKeysAreNotValueDigests(t *testing.T) {
	master := []byte("0123456789abcdef-key-one")
	d, err := NewSecretDigester(master)
	if err != nil {
		t.Fatal(err)
	}
	for _, purpose := range []string{"restore-api-cursors", "x"} {
		key := hex.EncodeToString(d.DeriveKey(purpose))
		for _, chosen := range []string{purpose, "options-record/" + purpose, derivedKeyLabel + purpose, valueDigestLabel} {
			for _, p := range []SecretPlace{{}, {"default", "tenant", "s"}} {
				for _, field := range []string{"", "k"} {
					dg, _ := d.at(p).value(field, chosen, false).(string)
					if strings.TrimPrefix(dg, KeyedDigestPrefix) == key {
						t.Errorf("the %s key is the digest of the value %q recorded at %v/%q", purpose, chosen, p, field)
					}
				}
			}
			// Nor the HMAC of the chosen value under the operator's key
			// (what digests were before).
			m := hmac.New(sha256.New, master)
			m.Write([]byte(chosen))
			if hex.EncodeToString(m.Sum(nil)) == key {
				t.Errorf("the %s key is HMAC(master, %q)", purpose, chosen)
			}
		}
	}
	if string(d.DeriveKey("a")) == string(d.DeriveKey("b")) || len(d.DeriveKey("a")) != 32 {
		t.Error("derived keys of two purposes are equal, or not 32 bytes")
	}
}
