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

// Text, Bytea and Timestamptz are elements of an Array of text, bytea and
// timestamptz. A nil Bytea is a NULL element.
type (
	Text        string
	Bytea       []byte
	Timestamptz time.Time
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

// Register tells a connection's type map the PostgreSQL types of the
// Arrays, which it needs to encode them in the text format (pgx's simple
// protocol names no parameter's type; the extended protocol's do).
func Register(m *pgtype.Map) {
	m.RegisterDefaultPgType(Array[Text]{}, "_text")
	m.RegisterDefaultPgType(Array[Bytea]{}, "_bytea")
	m.RegisterDefaultPgType(Array[Timestamptz]{}, "_timestamptz")
}
