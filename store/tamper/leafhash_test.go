package tamper

import (
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// refLeafHash and refID are LeafHash and Ref.id as they were written
// first, over appendValue: what the logs already stored were hashed with.
func refLeafHash(r Ref, digest [32]byte) tlog.Hash {
	b := []byte{encodingVersion, byte(r.Kind)}
	for _, v := range []any{r.Cluster, r.UID, r.Key, r.At, digest[:]} {
		b, _ = appendValue(b, v)
	}
	return tlog.RecordHash(b)
}

func refID(r Ref) string {
	b := []byte{byte(r.Kind)}
	for _, v := range []any{r.Cluster, r.UID, r.Key} {
		b, _ = appendValue(b, v)
	}
	if r.Kind != KindVersion {
		b = binary.BigEndian.AppendUint64(b, uint64(r.At.UnixMicro()))
	}
	return string(b)
}

// TestLeafHashEncoding: LeafHash and Ref.id, written without appendValue's
// interfaces, are what they were over appendValue, for the hostile
// strings as cluster, uid and key (nil and empty keys, long ones past
// LeafHash's stack buffer) and times before 1970 and after; and a leaf's
// hash is the one a log stored (a constant): a change of either encoding
// would fail every log already written.
func TestLeafHashEncoding(t *testing.T) {
	at := []time.Time{time.Unix(0, 0), time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(2026, 11, 27, 7, 52, 1, 123456789, time.UTC)}
	long := string(make([]byte, 300))
	strs := append(append([]string{}, hostile...), long)
	for i, s := range strs {
		for _, k := range []Kind{KindEvent, KindVersion, KindCutoff} {
			var key []byte
			switch i % 3 {
			case 1:
				key = []byte{}
			case 2:
				key = []byte(s)
			}
			r := Ref{Kind: k, Cluster: s, UID: strs[(i+1)%len(strs)], Key: key, At: at[i%len(at)]}
			var d [32]byte
			d[0], d[31] = byte(i), byte(k)
			if got, want := LeafHash(r, d), refLeafHash(r, d); got != want {
				t.Fatalf("LeafHash(%v) = %x, want %x", r, got[:], want[:])
			}
			if got, want := r.id(), refID(r); got != want {
				t.Fatalf("%v.id() = %x, want %x", r, got, want)
			}
		}
	}
	r := Ref{Kind: KindVersion, Cluster: "default", UID: "6f1c", Key: []byte{1, 2, 3}, At: at[2]}
	const want = "f3af3b7c5e5150f74f4a80cfeb916544e636ff2f1bdd83e8230d498debc2762d"
	for _, h := range []tlog.Hash{LeafHash(r, [32]byte{0: 0xab}), refLeafHash(r, [32]byte{0: 0xab})} {
		if hex.EncodeToString(h[:]) != want {
			t.Errorf("LeafHash(%v) = %x, want %s (the hash logs stored)", r, h[:], want)
		}
	}
}
