package pgarray

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Array is a one-dimensional array parameter of Text, Bytea or
// Timestamptz elements (pgtype.ArraySetter's reading half); nil is NULL.
type Array[T any] []T

// Dimensions is the array's one dimension, from 1 (nil: NULL).
func (a Array[T]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index returns a pointer to element i: pgx encodes it without boxing it.
func (a Array[T]) Index(i int) any { return &a[i] }

// IndexType is the type pgx plans the elements' encoding for.
func (a Array[T]) IndexType() any { return new(T) }

// Text, Bytea, Timestamptz and Int2 are elements of an Array of text,
// bytea, timestamptz and smallint. A nil Bytea is a NULL element.
type (
	Text        string
	Bytea       []byte
	Timestamptz time.Time
	Int2        int16
)

// TextValue is the element's text.
func (e *Text) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// BytesValue is the element's bytes (nil: NULL).
func (e *Bytea) BytesValue() ([]byte, error) { return *e, nil }

// TimestamptzValue is the element's time.
func (e *Timestamptz) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*e), Valid: true}, nil
}

// Int64Value is the element's value.
func (e *Int2) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

// Register tells a connection's type map the PostgreSQL types of the
// Arrays, which it needs to encode them in the text format (pgx's simple
// protocol names no parameter's type; the extended protocol's do), and
// gives the map's text[], bytea[], timestamptz[] and smallint[] the
// Arrays' cheaper binary encoding (codec). A second call changes nothing.
func Register(m *pgtype.Map) {
	m.RegisterDefaultPgType(Array[Text]{}, "_text")
	m.RegisterDefaultPgType(Array[Bytea]{}, "_bytea")
	m.RegisterDefaultPgType(Array[Timestamptz]{}, "_timestamptz")
	m.RegisterDefaultPgType(Array[Int2]{}, "_int2")
	for _, oid := range []uint32{pgtype.TextArrayOID, pgtype.ByteaArrayOID, pgtype.TimestamptzArrayOID, pgtype.Int2ArrayOID} {
		if t, ok := m.TypeForOID(oid); ok {
			if ac, ok := t.Codec.(*pgtype.ArrayCodec); ok {
				m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: codec{ac}})
			}
		}
	}
}
