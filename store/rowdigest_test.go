package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/tamper"
)

// rowValues is a row as tamper.RowEncoding takes it: the values eventRow
// or versionRow hand to pgx, as the integrator reads them back (NULL for a
// nil []byte or []string, a json column by the SHA-256 of its text, a
// jsonb one by that of jsonbText's), or ok false when a jsonb text is not
// known for sure. It is how the ingest computed its digests before it
// encoded column by column.
func rowValues(t *testing.T, row []any, columns []string) (vals []any, ok bool) {
	t.Helper()
	vals = make([]any, len(row))
	for i, x := range row {
		switch x := x.(type) {
		case nil:
		case []byte:
			switch columns[i] {
			case "object", "object_exact", "request_object":
				if x != nil {
					d := sha256.Sum256(x)
					vals[i] = d[:]
				}
			case "user_extra", "annotations":
				text, err := jsonbText(x)
				if errors.Is(err, errJSONBUnsure) {
					return nil, false
				}
				if err != nil {
					t.Fatal(err)
				}
				d := sha256.Sum256(text)
				vals[i] = d[:]
			default:
				if x != nil {
					vals[i] = x
				}
			}
		case *int64:
			if x != nil {
				vals[i] = *x
			}
		case []string:
			if x != nil {
				a := make([]any, len(x))
				for j := range x {
					a[j] = x[j]
				}
				vals[i] = a
			}
		case string, bool, time.Time, int32:
			vals[i] = x
		default:
			t.Fatalf("%s: no encoding of %T", columns[i], x)
		}
	}
	return vals, true
}

// hostileRows are events and versions with the hostile corpus in each
// column, NULLs and empty values where the model has them, and JSON that
// jsonbText is sure of and unsure of.
func hostileRows(t *testing.T) ([]*model.Event, []*model.Version) {
	hostile := hostileStrings(t)
	sure, unsure := jsonbCorpus(t)
	texts := append(append([]string{}, sure...), unsure...)
	at := time.Date(2026, 11, 27, 7, 44, 32, 123456789, time.UTC)
	var events []*model.Event
	var versions []*model.Version
	for i := range len(texts) + len(hostile) {
		s := hostile[i%len(hostile)]
		k := sha256.Sum256(fmt.Append(nil, i, s))
		opt := func(n int) string { // "" (NULL where nullString) one time in n
			if i%n == 0 {
				return ""
			}
			return s
		}
		list := func(n int) []string { // nil, empty or hostile
			switch i % n {
			case 0:
				return nil
			case 1:
				return []string{}
			}
			return []string{s, "", s + s}
		}
		text := func(n int) []byte { // nil, empty or JSON, each text in turn
			switch i % n {
			case 0:
				return nil
			case 1:
				return []byte{}
			}
			return []byte(texts[(i+n)%len(texts)])
		}
		e := &model.Event{Cluster: s, Key: k[:], StageAt: at.Add(time.Duration(i) * 999 * time.Nanosecond), AuditID: s, Stage: opt(5),
			Verb: s, RequestURI: s + "/" + s, Username: opt(4), UserUID: opt(3), UserGroups: list(3), UserExtra: text(4),
			ImpersonatedUser: opt(2), ImpersonatedGroups: list(4), SourceIPs: list(5), UserAgent: opt(6), APIGroup: opt(2),
			APIVersion: s, Resource: s, Subresource: opt(3), Namespace: opt(2), Name: s, ObjectUID: opt(4),
			ResponseCode: int32(i*37 - 500), ResponseReason: opt(3), ResponseMessage: opt(2), RequestObject: text(3),
			Annotations: text(5), Rules: list(3), SecretDigested: i%2 == 0}
		if i%3 != 0 {
			e.ReceivedAt = at.Add(-time.Duration(i) * time.Microsecond)
		}
		if i%7 == 0 {
			e.Key = nil
		}
		events = append(events, e)
		rv := int64(i) - 3
		v := &model.Version{Cluster: s, UID: s, Key: k[:], ResourceVersion: &rv, Origin: model.OriginChange, Verb: s,
			ChangedAt: at.Add(time.Duration(i) * 1001 * time.Nanosecond), EventKey: k[:16], APIGroup: opt(2), APIVersion: s,
			Kind: s, Resource: s, Subresource: opt(3), Namespace: opt(2), Name: s, Created: i%2 == 0, Deleted: i%3 == 0,
			Complete: i%5 != 0, Object: text(3), SecretDigested: i%4 == 0, Rules: list(3), ObjectExact: text(4)}
		if i%2 == 0 {
			v.ResourceVersion, v.EventKey, v.Origin = nil, nil, model.OriginBaseline
		}
		versions = append(versions, v)
	}
	return events, versions
}

// TestRowEncoderIsRowEncoding: the ingest's encoding of each event and
// version it writes, column by column (encodeEvent, encodeVersion), is
// byte for byte tamper.RowEncoding of the row's values (eventRow,
// versionRow), over the hostile corpus: the digests it writes are the
// ones verify recomputes.
func TestRowEncoderIsRowEncoding(t *testing.T) {
	events, versions := hostileRows(t)
	var d digester
	withUnsure := 0
	// Twice over: the second time each jsonb text's digest (or its
	// unsureness) is the digester's cached one (jsonbSums).
	for pass := range 2 {
		if pass == 1 && len(d.jsonbSums) == 0 {
			t.Fatal("the digester cached no jsonb text's digest")
		}
		for _, e := range events {
			at := e.StageAt.Add(time.Second)
			tamper.EventDigest(&d.enc, len(eventColumns))
			ok := d.encodeEvent(e, at)
			vals, wantOK := rowValues(t, eventRow(e, at), eventColumns)
			if ok != wantOK {
				t.Errorf("event %q: encoded %v, want %v (jsonb text sure)", e.AuditID, ok, wantOK)
				continue
			}
			if !ok {
				withUnsure++
				continue
			}
			want, err := tamper.RowEncoding(tamper.KindEvent, vals)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.enc.Encoding(); !bytes.Equal(got, want) {
				t.Errorf("event %q:\n encoded     %x\n RowEncoding %x", e.AuditID, got, want)
			}
			got, err := eventDigest(e, at, tamper.EventDigest)
			if err != nil {
				t.Fatal(err)
			}
			if w := sha256.Sum256(want); !bytes.Equal(got, w[:]) {
				t.Errorf("event %q: digest %x, want %x", e.AuditID, got, w)
			}
		}
	}
	withUnsure /= 2
	for _, v := range versions {
		tamper.VersionDigest(&d.enc, len(versionColumns))
		encodeVersion(&d.enc, v)
		vals, _ := rowValues(t, versionRow(v), versionColumns)
		want, err := tamper.RowEncoding(tamper.KindVersion, vals)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.enc.Encoding(); !bytes.Equal(got, want) {
			t.Errorf("version %q:\n encoded     %x\n RowEncoding %x", v.UID, got, want)
		}
		got, err := versionDigest(v, tamper.VersionDigest)
		if err != nil {
			t.Fatal(err)
		}
		if got != sha256.Sum256(want) {
			t.Errorf("version %q: digest %x, want %x", v.UID, got, sha256.Sum256(want))
		}
	}
	if withUnsure == 0 || withUnsure == len(events) {
		t.Errorf("%d of %d events with jsonb text not known for sure: the corpus does not try both", withUnsure, len(events))
	}
	t.Logf("%d events (%d unsure), %d versions encoded as RowEncoding", len(events), withUnsure, len(versions))
}

// TestJSONBSumsBounded: a digester keeps the digests of at most
// maxJSONBSums jsonb texts, none longer than maxCachedJSONB, and a text
// printed after the cache was emptied digests as before.
func TestJSONBSumsBounded(t *testing.T) {
	var d digester
	var first []byte
	for i := range 3 * maxJSONBSums {
		text := fmt.Appendf(nil, `{"k":"v%d"}`, i)
		d.enc.Reset(0)
		if !d.jsonb(text) {
			t.Fatalf("%s: not printed", text)
		}
		if i == 0 {
			first = append([]byte{}, d.enc.Encoding()...)
		}
		if len(d.jsonbSums) > maxJSONBSums {
			t.Fatalf("%d texts cached; want at most %d", len(d.jsonbSums), maxJSONBSums)
		}
	}
	d.enc.Reset(0)
	if !d.jsonb([]byte(`{"k":"v0"}`)) || !bytes.Equal(d.enc.Encoding(), first) {
		t.Errorf("a text printed again after the cache was emptied: %x, want %x", d.enc.Encoding(), first)
	}
	long := fmt.Appendf(nil, `{"k":"%s"}`, strings.Repeat("x", maxCachedJSONB))
	d.jsonbSums = nil
	if !d.jsonb(long) || len(d.jsonbSums) != 0 {
		t.Errorf("a text of %d bytes cached", len(long))
	}
}

// TestRowDigestAllocatesNothing: a digester, once its buffers have grown,
// encodes an event (jsonb printed) and a version without allocating: the
// cost the ingest pays per kept row (issue 36). Counted, not timed.
func TestRowDigestAllocatesNothing(t *testing.T) {
	events, versions := hostileRows(t)
	var d digester
	at := time.Now()
	// The bench's event and version: printed jsonb with escapes, a
	// Deployment's object.
	for _, e := range events {
		tamper.EventDigest(&d.enc, len(eventColumns))
		d.encodeEvent(e, at)
	}
	for _, v := range versions {
		tamper.VersionDigest(&d.enc, len(versionColumns))
		encodeVersion(&d.enc, v)
	}
	e, v := events[len(events)-1], versions[len(versions)-1]
	e.UserExtra = []byte(`{"authentication.kubernetes.io/pod-name":["p\u00e9"],"a":{"\"k\"":[1,"x",null,{"b":true}]}}`)
	e.Annotations = []byte(`{"authorization.k8s.io/reason":"RBAC: allowed by \"x\"","authorization.k8s.io/decision":"allow"}`)
	v.Object = benchDeployment()
	var sure bool
	if n := testing.AllocsPerRun(100, func() {
		tamper.EventDigest(&d.enc, len(eventColumns))
		sure = d.encodeEvent(e, at)
		tamper.VersionDigest(&d.enc, len(versionColumns))
		encodeVersion(&d.enc, v)
		_ = d.enc.Sum()
	}); n != 0 || !sure {
		t.Errorf("an event and a version encoded with %v allocations (sure of the jsonb: %v), want 0", n, sure)
	}
}
