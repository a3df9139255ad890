package auditsink

import (
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
	tests := []struct {
		name string
		a, b any
		same bool
	}{
		{"same key, same value", k1.value("hunter2", false), k1.value("hunter2", false), true},
		{"data (base64) and stringData of one value", k1.value("aHVudGVyMg==", true), k1.value("hunter2", false), true},
		{"same key, other value", k1.value("hunter2", false), k1.value("hunter3", false), false},
		{"other key, same value", k1.value("hunter2", false), k2.value("hunter2", false), false},
		{"keyed vs the plain SHA-256 a dictionary holds", k1.value("hunter2", false), PlainDigestPrefix + hex.EncodeToString(plain[:]), false},
		{"no key: plain SHA-256", (*SecretDigester)(nil).value("hunter2", false), PlainDigestPrefix + hex.EncodeToString(plain[:]), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.a == tc.b) != tc.same {
				t.Errorf("%v vs %v: equal = %v, want %v", tc.a, tc.b, tc.a == tc.b, tc.same)
			}
		})
	}
	if s, _ := k1.value("x", false).(string); !strings.HasPrefix(s, KeyedDigestPrefix) {
		t.Errorf("keyed digest %q lacks %q", s, KeyedDigestPrefix)
	}
	if _, err := NewSecretDigester([]byte("short")); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}
