package auditsink_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
	"github.com/options-record/options-record/test/gen"
)

// hostileInserts are what a cluster user can put inside a JSON string of an
// object or a patch: NUL, lone surrogate escapes (high, low, reversed pair),
// a valid pair, an escaped backslash before a surrogate-looking text, and
// bytes that are not UTF-8.
var hostileInserts = [][]byte{
	[]byte(`\u0000`), []byte(`\ud800`), []byte(`\udfff`), []byte(`\udc00\ud800`), []byte(`\ud83d\ude00`),
	[]byte(`\\ud800`), []byte("\xff\xfe"), []byte(`\u0000\udbff`),
}

// typeFields match an object's apiVersion or kind member, which a mutation
// may remove.
var typeFields = regexp.MustCompile(`"(apiVersion|kind)"\s*:\s*"[^"]*"\s*,`)

// uids match the start of a uid value.
var uids = regexp.MustCompile(`"uid"\s*:\s*"`)

// auditIDs match the start of an auditID value.
var auditIDs = regexp.MustCompile(`"auditID"\s*:\s*"`)

// stringValues match the start of a string member value, up to its opening
// quote.
var stringValues = regexp.MustCompile(`":\s*"`)

// TestEveryStoredFullStateIsAnObject is the record's fidelity property: over
// real event shapes (the apiserver fixtures of filter/testdata, test/gen's
// builders, the demo log) and seeded random hostile mutations of them, every
// acknowledged batch is stored, every row reads back as jsonb, and every
// version stored with a full state is a Kubernetes object (apiVersion, kind,
// metadata.name). The end-to-end test checks the same of what a real
// apiserver sends, and that kubectl accepts the exported manifests.
func TestEveryStoredFullStateIsAnObject(t *testing.T) {
	e := newEnv(t)
	demo, err := os.ReadFile("../test/fixtures/demo-audit.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	seeds := gen.EventListSeeds(demo)
	files, err := filepath.Glob("../filter/testdata/events/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("apiserver fixtures: %d files, %v", len(files), err)
	}
	for _, f := range files {
		ev, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`+string(ev)+`]}`))
	}
	rng := rand.New(rand.NewPCG(12, 2026))
	bodies := append([][]byte(nil), seeds...)
	for i := 0; i < 600; i++ {
		// Objects of their own (the record keeps the earliest write of a
		// state: a repeat of one is not stored again).
		b := uids.ReplaceAll(seeds[rng.IntN(len(seeds))], []byte(fmt.Sprintf(`"uid":"m%d-`, i)))
		b = auditIDs.ReplaceAll(b, []byte(fmt.Sprintf(`"auditID":"m%d-`, i)))
		bodies = append(bodies, mutate(rng, b))
	}
	ctx := context.Background()
	now := gen.Base.Add(time.Hour) // after the events of the seeds
	var sum auditsink.Outcome
	for i, body := range bodies {
		events, skipped, err := decode.EventList(body, now)
		if err != nil {
			continue // refused as a whole (a 400): nothing acknowledged
		}
		out, err := e.pipe.Process(ctx, "default", events, skipped)
		if err != nil {
			t.Fatalf("body %d: a decoded batch was not stored: %v\n%.600s", i, err, body)
		}
		sum.Add(out)
	}

	var versions, full, typed, events int
	// count(x::jsonb) reads every row as jsonb: one that is not fails the
	// query.
	err = e.pool.QueryRow(ctx, `SELECT count(*), count(object::jsonb) FILTER (WHERE complete),
		count(*) FILTER (WHERE complete AND jsonb_typeof(object::jsonb->'apiVersion') = 'string' AND object::jsonb->>'apiVersion' <> ''
			AND jsonb_typeof(object::jsonb->'kind') = 'string' AND object::jsonb->>'kind' <> ''
			AND jsonb_typeof(object::jsonb->'metadata'->'name') = 'string' AND object::jsonb->'metadata'->>'name' <> ''),
		(SELECT count(request_object::jsonb) + count(annotations) + count(*) FROM events)
		FROM object_versions WHERE object IS NULL OR object::jsonb IS NOT NULL`).Scan(&versions, &full, &typed, &events)
	if err != nil {
		t.Fatalf("read back as jsonb: %v", err)
	}
	if full < 50 || typed != full {
		t.Errorf("%d versions stored with a full state, %d of them Kubernetes objects", full, typed)
	}
	t.Logf("outcome %+v", sum)
	t.Logf("%d bodies: %d versions (%d full states), %d event rows read back", len(bodies), versions, full, events)
}

// mutate returns a copy of body with a hostile insert in one string, or
// with an apiVersion or kind member removed.
func mutate(rng *rand.Rand, body []byte) []byte {
	if rng.IntN(4) == 0 {
		locs := typeFields.FindAllIndex(body, -1)
		if len(locs) > 0 {
			l := locs[rng.IntN(len(locs))]
			return append(bytes.Clone(body[:l[0]]), body[l[1]:]...)
		}
	}
	// After the opening quote of a string value.
	starts := stringValues.FindAllIndex(body, -1)
	if len(starts) == 0 {
		return body
	}
	at := starts[rng.IntN(len(starts))][1]
	ins := hostileInserts[rng.IntN(len(hostileInserts))]
	out := append(bytes.Clone(body[:at]), ins...)
	return append(out, body[at:]...)
}
