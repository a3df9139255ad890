package jsonscan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The scanner against go-json-experiment's jsontext, on the audit events of
// filter/testdata, for what the ingest does most with it: walk an object's
// members in order, skipping each value and walking the members of each
// that is an object (withoutManagedFields on every state kept), and skip a
// whole value (the extent of an event).
//
//	go test -run='^$' -bench=. -benchmem ./store/model/jsonscan/

func benchEvents(b *testing.B) (events [][]byte, size int64) {
	b.Helper()
	files, err := filepath.Glob("../../../filter/testdata/events/*.json")
	if err != nil || len(files) == 0 {
		b.Fatalf("no events: %v", err)
	}
	for _, f := range files {
		ev, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, bytes.TrimSpace(ev))
		size += int64(len(ev))
	}
	return events, size
}

func BenchmarkWalk(b *testing.B) {
	events, size := benchEvents(b)
	for _, m := range []struct {
		name string
		mode Mode
	}{{"jsonscan-lax", Lax}, {"jsonscan-strict", Mode{Strict: true}}} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, ev := range events {
					_, err := m.mode.Walk(ev, 0, func(mb Member) (int, error) {
						if ev[mb.Value] != '{' {
							return m.mode.skip(ev, mb.Value, 1)
						}
						return m.mode.Object(ev, mb.Value, func(Member) error { return nil })
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		dec := jsontext.NewDecoder(bytes.NewReader(nil))
		var buf bytes.Buffer
		for b.Loop() {
			for _, ev := range events {
				buf = *bytes.NewBuffer(ev)
				dec.Reset(&buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
				if err := walkJSONText(dec, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// walkJSONText walks an object's members, skipping their values, and
// walks the members of those that are objects, down to depth more.
func walkJSONText(dec *jsontext.Decoder, more int) error {
	if _, err := dec.ReadToken(); err != nil { // {
		return err
	}
	for dec.PeekKind() != '}' {
		if _, err := dec.ReadToken(); err != nil { // the name
			return err
		}
		var err error
		if more > 0 && dec.PeekKind() == '{' {
			err = walkJSONText(dec, more-1)
		} else {
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.ReadToken() // }
	return err
}

func BenchmarkSkip(b *testing.B) {
	events, size := benchEvents(b)
	for _, m := range []struct {
		name string
		mode Mode
	}{{"jsonscan-lax", Lax}, {"jsonscan-strict", Mode{Strict: true}}} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, ev := range events {
					if _, err := m.mode.Skip(ev, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		dec := jsontext.NewDecoder(bytes.NewReader(nil))
		var buf bytes.Buffer
		for b.Loop() {
			for _, ev := range events {
				buf = *bytes.NewBuffer(ev)
				dec.Reset(&buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
				if err := dec.SkipValue(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
