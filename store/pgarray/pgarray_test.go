package pgarray

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestEncodingAllocatesNoElement: pgx encodes an Array of 400 elements
// with a bounded number of allocations, not one or more per element as it
// does a []string, [][]byte or []time.Time.
func TestEncodingAllocatesNoElement(t *testing.T) {
	m := pgtype.NewMap()
	const n = 400
	uids, keys, ats := make(Array[Text], n), make(Array[Bytea], n), make(Array[Timestamptz], n)
	plainUIDs, plainKeys, plainAts := make([]string, n), make([][]byte, n), make([]time.Time, n)
	for i := range n {
		uids[i], keys[i], ats[i] = "uid", Bytea("key"), Timestamptz(time.Unix(int64(i), 0))
		plainUIDs[i], plainKeys[i], plainAts[i] = "uid", []byte("key"), time.Unix(int64(i), 0)
	}
	buf := make([]byte, 0, 1<<16)
	encode := func(oid uint32, v any) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, err := m.Encode(oid, pgtype.BinaryFormatCode, v, buf[:0]); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, c := range []struct {
		name        string
		oid         uint32
		array, flat any
	}{
		{"text[]", pgtype.TextArrayOID, uids, plainUIDs},
		{"bytea[]", pgtype.ByteaArrayOID, keys, plainKeys},
		{"timestamptz[]", pgtype.TimestamptzArrayOID, ats, plainAts},
	} {
		got, flat := encode(c.oid, c.array), encode(c.oid, c.flat)
		t.Logf("%s of %d: %.0f allocations as an Array, %.0f as a slice", c.name, n, got, flat)
		if got > 10 {
			t.Errorf("%s of %d: %.0f allocations; want a few, not one per element", c.name, n, got)
		}
	}
}
