package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/partitions"
	"github.com/options-record/options-record/store/tamper/refpack"
	"github.com/options-record/options-record/store/tamper/rowenc"
)

var eventColumns = []string{
	"cluster", "event_key", "stage_at", "received_at", "audit_id", "stage", "verb", "request_uri",
	"username", "user_uid", "user_groups", "user_extra", "impersonated_user", "impersonated_groups",
	"source_ips", "user_agent", "api_group", "api_version", "resource", "subresource", "namespace",
	"name", "object_uid", "response_code", "response_reason", "response_message", "request_object",
	"annotations", "rules", "secret_digested", "ingested_at",
}

var versionColumns = []string{
	"cluster", "uid", "version_key", "resource_version", "origin", "verb", "changed_at", "event_key",
	"api_group", "api_version", "kind", "resource", "subresource", "namespace", "name", "created",
	"deleted", "complete", "object", "secret_digested", "rules", "object_exact",
}

// Both lookups only read rows the batch could collide with: the events of
// its clusters and time range, and the versions of its objects.
//
// existingEventsSQL finds the events of a batch already stored, in one
// row, with the transaction's time: now(), the default of
// events.ingested_at, which the batch writes itself (so that it knows each
// event's row, for its digest in the tamper-evident log). The bounds on
// stage_at ($4, $5: the batch's earliest and latest) are redundant with
// the join but let the planner prune the daily partitions: without them,
// every lookup plans a join over all of them (about 3 ms with 40 days kept,
// 0.2 ms with the bounds).
const existingEventsSQL = `
SELECT now(), coalesce(array_agg(e.cluster), '{}'), coalesce(array_agg(e.event_key), '{}')
FROM events e
JOIN unnest($1::text[], $2::bytea[], $3::timestamptz[]) AS k(cluster, event_key, stage_at)
  ON e.cluster = k.cluster AND e.event_key = k.event_key AND e.stage_at = k.stage_at
WHERE e.stage_at BETWEEN $4 AND $5`

// existingStatesSQL finds, for each (object, resourceVersion) of a batch,
// the earliest stored change that reported it.
const existingStatesSQL = `
SELECT v.cluster, v.uid, v.resource_version, min(v.changed_at)
FROM object_versions v
JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS k(cluster, uid, resource_version)
  ON v.cluster = k.cluster AND v.uid = k.uid AND v.resource_version = k.resource_version
WHERE v.origin = 'change' AND NOT v.deleted
GROUP BY 1, 2, 3`

type stateKey struct {
	cluster, uid string
	rv           int64
}

// WriteBatch stores a batch in one transaction and returns once it is
// committed. Events already stored (a redelivery) and changes that produced a
// version already stored (a no-op update, which keeps the resourceVersion)
// are skipped, so writing the same batch twice changes nothing.
func (s *Store) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	if len(b.Events) == 0 && len(b.Versions) == 0 {
		return model.WriteResult{}, nil
	}
	days := make([]time.Time, 0, 2)
	for i := range b.Events {
		days = append(days, b.Events[i].StageAt)
	}
	if err := s.EnsurePartitionsFor(ctx, days); err != nil {
		return model.WriteResult{}, err
	}
	var res model.WriteResult
	write := func(tx pgx.Tx) error {
		var err error
		res, err = writeBatch(ctx, tx, b, s.tamperLog, rowDigests{s.versionDigest, s.eventDigest}, s.log)
		return err
	}
	err := s.Transact(ctx, write)
	if partitions.IsMissing(err) {
		// Another replica's retention dropped a day this one still knew
		// (a late event of a day a short retention expired): make it again.
		s.parts.Forget(days)
		if err := s.EnsurePartitionsFor(ctx, days); err != nil {
			return model.WriteResult{}, err
		}
		err = s.Transact(ctx, write)
	}
	if partitions.IsMissing(err) {
		// Not the PostgreSQL error's SQLSTATE (class 23, which would make
		// the batch invalid data, dropped): the database lacks a table.
		return model.WriteResult{}, fmt.Errorf("%w: %d events: %v", ErrNoPartition, len(b.Events), err)
	}
	if err != nil {
		return model.WriteResult{}, fmt.Errorf("store: write batch of %d events: %w", len(b.Events), err)
	}
	s.confirmed.Add(float64(res.Confirmed))
	return res, nil
}

// rowDigests are the tamper-evident log's digests of a row from its values
// (Options.VersionDigest, Options.EventDigest); nil: none.
type rowDigests struct {
	version, event func(*rowenc.Encoder, int)
}

func writeBatch(ctx context.Context, tx pgx.Tx, b *model.Batch, logged bool, digests rowDigests, log *slog.Logger) (model.WriteResult, error) {
	var res model.WriteResult
	existing, ingestedAt, err := existingEvents(ctx, tx, b.Events)
	if err != nil {
		return res, err
	}
	events := make([]*model.Event, 0, len(b.Events))
	seenEvent := make(map[string]bool, len(b.Events))
	for i := range b.Events {
		e := &b.Events[i]
		k := e.Cluster + "\x00" + string(e.Key)
		if existing[k] || seenEvent[k] {
			res.DuplicateEvents++
			continue
		}
		seenEvent[k] = true
		events = append(events, e)
	}

	candidates := make([]*model.Version, 0, len(b.Versions))
	seenVersion := make(map[string]bool, len(b.Versions))
	for i := range b.Versions {
		v := &b.Versions[i]
		if v.EventKey != nil && !seenEvent[v.Cluster+"\x00"+string(v.EventKey)] {
			continue // its event is stored already: so is the version
		}
		// The same event twice in one batch (a journal merging a batch
		// with its redelivery) gives its versions twice.
		k := v.Cluster + "\x00" + v.UID + "\x00" + string(v.Key)
		if seenVersion[k] {
			continue
		}
		seenVersion[k] = true
		candidates = append(candidates, v)
	}
	states, err := existingStates(ctx, tx, candidates)
	if err != nil {
		return res, err
	}
	// A write that changed nothing (a no-op update or apply) answers with
	// the resourceVersion of the change before it: that state is not stored
	// again. Batches of different apiservers arrive in any order, so only a
	// later report of a state is a no-op; an earlier one is stored, and the
	// views and queries show the earliest change of each state.
	versions := make([]*model.Version, 0, len(candidates))
	for _, v := range candidates {
		if v.Origin == model.OriginChange && !v.Deleted && v.ResourceVersion != nil {
			k := stateKey{v.Cluster, v.UID, *v.ResourceVersion}
			if at, ok := states[k]; ok && !v.ChangedAt.Before(at) {
				res.NoopVersions++
				continue
			}
			states[k] = v.ChangedAt
		}
		versions = append(versions, v)
	}

	res.Events, res.Versions, err = copyRows(ctx, tx, events, versions, ingestedAt)
	if err != nil {
		return res, err
	}
	if logged {
		if err = copyPending(ctx, tx, events, versions, ingestedAt, digests); err != nil {
			return res, err
		}
	}
	res.Notifications, err = queueNotifications(ctx, tx, events, versions)
	if err != nil {
		return res, err
	}
	// The admission observations the events name become their prior
	// states, now or when the observation arrives.
	var claimErr error
	res.Confirmed, claimErr, err = writeClaims(ctx, tx, events, logged)
	if claimErr != nil {
		log.Warn("admission observations named by stored events left unconfirmed", "events", len(events), "err", claimErr)
	}
	return res, err
}

// The kinds of log_pending rows (tamper.KindEvent, KindVersion, KindCutoff).
const (
	pendingEvent   int16 = 1
	pendingVersion int16 = 2
	pendingCutoff  int16 = 3
)

// insertPendingBatchSQL writes a batch's log_pending_batches row of one
// cluster: the references of the rows it stored, packed into one value
// (store/tamper/refpack: each row's kind, time, uid, key and digest, nil
// when none and the integrator reads the row), with their earliest time
// and their number, so that PostgreSQL does no work per row (migration
// 00033: the parallel arrays it replaces were received element by
// element, and first_at computed from them).
const insertPendingBatchSQL = `INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count) VALUES ($1, $2, $3, $4)`

// copyPending writes, in the batch's transaction, the tamper-evident log's
// pending rows of the rows the batch stored (store/tamper integrates
// them): one log_pending_batches row per cluster, whose packed value
// holds a reference per row (one row rather than one per stored row: a
// fraction of the WAL; migration 00027). A batch that rolls back leaves none, and a
// row the batch skipped as stored already gets none, so a batch that
// stores nothing writes none. With digests (Options.VersionDigest,
// Options.EventDigest), a row's reference carries its row's digest, from
// the values written (versionDigest, eventDigest), so that the integrator
// does not read the row back; an event whose jsonb text is not known for
// sure (jsonbText) gets none, and the integrator reads it.
func copyPending(ctx context.Context, tx pgx.Tx, events []*model.Event, versions []*model.Version, ingestedAt time.Time, digests rowDigests) error {
	if len(events)+len(versions) == 0 {
		return nil
	}
	// One packed value per cluster, of at most refpack.MaxRows rows (a
	// larger batch writes several): the integrator takes a larger one as
	// planted.
	type packed struct {
		cluster string
		p       *refpack.Builder
	}
	var values []packed
	byCluster := map[string]*refpack.Builder{}
	batch := func(cluster string) *refpack.Builder {
		p := byCluster[cluster]
		if p == nil || p.Len() >= refpack.MaxRows {
			p = &refpack.Builder{}
			p.Grow(min(len(events)+len(versions), refpack.MaxRows)) // a batch's rows are nearly always one cluster's
			byCluster[cluster] = p
			values = append(values, packed{cluster, p})
		}
		return p
	}
	for _, e := range events {
		d, err := eventDigest(e, ingestedAt, digests.event)
		if err != nil {
			return err
		}
		batch(e.Cluster).Add(pendingEvent, e.StageAt, "", e.Key, d)
	}
	for _, v := range versions {
		var d []byte
		if digests.version != nil {
			vd, err := versionDigest(v, digests.version)
			if err != nil {
				return err
			}
			d = vd[:]
		}
		batch(v.Cluster).Add(pendingVersion, v.ChangedAt, v.UID, v.Key, d)
	}
	b := &pgx.Batch{}
	for _, v := range values {
		b.Queue(insertPendingBatchSQL, v.cluster, v.p.Bytes(), v.p.First(), v.p.Len())
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write log_pending_batches: %w", err)
	}
	return nil
}

// CopyRows writes a batch's rows as they are, with no lookup of what is
// stored already: it is the write of WriteBatch without its deduplication.
// The benchmark's reference writer uses it as the floor of what a write
// costs; the sink never does (a redelivery fails on the primary key).
func CopyRows(ctx context.Context, tx pgx.Tx, b *model.Batch) (events, versions int, err error) {
	es := make([]*model.Event, len(b.Events))
	for i := range b.Events {
		es[i] = &b.Events[i]
	}
	vs := make([]*model.Version, len(b.Versions))
	for i := range b.Versions {
		vs[i] = &b.Versions[i]
	}
	var ingestedAt time.Time
	if len(es) > 0 {
		if err := tx.QueryRow(ctx, "SELECT now()").Scan(&ingestedAt); err != nil {
			return 0, 0, fmt.Errorf("transaction time: %w", err)
		}
	}
	return copyRows(ctx, tx, es, vs, ingestedAt)
}

// copyRows writes the rows; each event's ingested_at is ingestedAt, the
// transaction's now() (existingEventsSQL).
func copyRows(ctx context.Context, tx pgx.Tx, events []*model.Event, versions []*model.Version, ingestedAt time.Time) (ne, nv int, err error) {
	if len(events) > 0 {
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns,
			pgx.CopyFromSlice(len(events), func(i int) ([]any, error) { return eventRow(events[i], ingestedAt), nil }))
		if err != nil {
			return 0, 0, fmt.Errorf("copy events: %w", err)
		}
		ne = int(n)
	}
	if len(versions) > 0 {
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"object_versions"}, versionColumns,
			pgx.CopyFromSlice(len(versions), func(i int) ([]any, error) { return versionRow(versions[i]), nil }))
		if err != nil {
			return ne, 0, fmt.Errorf("copy versions: %w", err)
		}
		nv = int(n)
	}
	return ne, nv, nil
}

// existingEvents returns the events of a batch already stored, and the
// transaction's time (zero when the batch has no events).
func existingEvents(ctx context.Context, tx pgx.Tx, events []model.Event) (map[string]bool, time.Time, error) {
	var now time.Time
	if len(events) == 0 {
		return nil, now, nil
	}
	var clusters []string
	var keys [][]byte
	if err := tx.QueryRow(ctx, existingEventsSQL, existingEventsArgs(events)...).Scan(&now, &clusters, &keys); err != nil {
		return nil, now, fmt.Errorf("look up stored events: %w", err)
	}
	if len(clusters) != len(keys) {
		return nil, now, fmt.Errorf("look up stored events: %d clusters, %d keys", len(clusters), len(keys))
	}
	found := make(map[string]bool, len(keys))
	for i := range keys {
		found[clusters[i]+"\x00"+string(keys[i])] = true
	}
	return found, now, nil
}

func existingEventsArgs(events []model.Event) []any {
	clusters := make([]string, len(events))
	keys := make([][]byte, len(events))
	stages := make([]time.Time, len(events))
	first, last := events[0].StageAt, events[0].StageAt
	for i := range events {
		clusters[i], keys[i], stages[i] = events[i].Cluster, events[i].Key, events[i].StageAt
		if stages[i].Before(first) {
			first = stages[i]
		}
		if stages[i].After(last) {
			last = stages[i]
		}
	}
	return []any{clusters, keys, stages, first, last}
}

func existingStates(ctx context.Context, tx pgx.Tx, versions []*model.Version) (map[stateKey]time.Time, error) {
	var clusters, uids []string
	var rvs []int64
	for _, v := range versions {
		if v.Origin == model.OriginChange && !v.Deleted && v.ResourceVersion != nil {
			clusters, uids, rvs = append(clusters, v.Cluster), append(uids, v.UID), append(rvs, *v.ResourceVersion)
		}
	}
	found := map[stateKey]time.Time{}
	if len(uids) == 0 {
		return found, nil
	}
	rows, err := tx.Query(ctx, existingStatesSQL, clusters, uids, rvs)
	if err != nil {
		return nil, fmt.Errorf("look up stored versions: %w", err)
	}
	var k stateKey
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&k.cluster, &k.uid, &k.rv, &at}, func() error {
		found[k] = at
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up stored versions: %w", err)
	}
	return found, nil
}

func eventRow(e *model.Event, ingestedAt time.Time) []any {
	return []any{
		e.Cluster, e.Key, e.StageAt, nullTime(e.ReceivedAt), e.AuditID, e.Stage, e.Verb, e.RequestURI,
		e.Username, nullString(e.UserUID), nonNil(e.UserGroups), nullJSON(e.UserExtra),
		nullString(e.ImpersonatedUser), e.ImpersonatedGroups,
		nonNil(e.SourceIPs), nullString(e.UserAgent), e.APIGroup, e.APIVersion, e.Resource, e.Subresource,
		e.Namespace, e.Name, nullString(e.ObjectUID), e.ResponseCode, nullString(e.ResponseReason),
		nullString(e.ResponseMessage), nullJSON(e.RequestObject), nullJSON(e.Annotations),
		nonNil(e.Rules), e.SecretDigested, ingestedAt,
	}
}

func versionRow(v *model.Version) []any {
	return []any{
		v.Cluster, v.UID, v.Key, v.ResourceVersion, string(v.Origin), v.Verb, v.ChangedAt, v.EventKey,
		v.APIGroup, v.APIVersion, v.Kind, v.Resource, v.Subresource, v.Namespace, v.Name, v.Created,
		v.Deleted, v.Complete, nullJSON(v.Object), v.SecretDigested, nonNil(v.Rules), nullJSON(v.ObjectExact),
	}
}

// versionDigest is the tamper-evident log's digest of the object_versions
// row versionRow writes (start: Options.VersionDigest, tamper.VersionDigest,
// which begins the row's encoding), computed from the values themselves as
// the integrator would from the row read back: every column of
// object_versions is written from the batch (none has a default the batch
// leaves to PostgreSQL), a json column keeps its text exactly (its digest
// is the SHA-256 of the bytes sent), and a timestamp is stored in
// microseconds as pgx sends it (truncated, as UnixMicro). encodeVersion
// encodes the columns in versionColumns' order, each as versionRow hands it
// to pgx: TestRowEncoderIsRowEncoding holds its bytes to tamper's
// RowEncoding of versionRow's values, TestPendingDigestIsStoredRows the
// digest to the one recomputed from what is stored, on the hostile corpus.
func versionDigest(v *model.Version, start func(*rowenc.Encoder, int)) ([32]byte, error) {
	d := getDigester()
	defer d.put()
	start(&d.enc, len(versionColumns))
	encodeVersion(&d.enc, v)
	return d.enc.Sum(), nil
}

// encodeVersion encodes versionRow(v)'s columns.
func encodeVersion(e *rowenc.Encoder, v *model.Version) {
	e.String(v.Cluster)
	e.String(v.UID)
	e.Bytes(v.Key)
	if v.ResourceVersion != nil {
		e.Int(*v.ResourceVersion)
	} else {
		e.Null()
	}
	e.String(string(v.Origin))
	e.String(v.Verb)
	e.Time(v.ChangedAt)
	e.Bytes(v.EventKey)
	e.String(v.APIGroup)
	e.String(v.APIVersion)
	e.String(v.Kind)
	e.String(v.Resource)
	e.String(v.Subresource)
	e.String(v.Namespace)
	e.String(v.Name)
	e.Bool(v.Created)
	e.Bool(v.Deleted)
	e.Bool(v.Complete)
	e.SHA256(nilIfEmpty(v.Object)) // nullJSON
	e.Bool(v.SecretDigested)
	e.Strings(nonNil(v.Rules))
	e.SHA256(nilIfEmpty(v.ObjectExact))
}

// eventDigest is the tamper-evident log's digest of the events row
// eventRow writes (start: Options.EventDigest, tamper.EventDigest),
// computed from the values as versionDigest does; ingested_at is the
// transaction's time the batch wrote, and a jsonb column (user_extra,
// annotations) is the SHA-256 of the text PostgreSQL prints for it
// (jsonbText). It is nil, and the integrator reads the row back, without
// start or when that text is not known for sure. TestRowEncoderIsRowEncoding
// and TestPendingDigestIsStoredRows hold it as they do versionDigest.
func eventDigest(e *model.Event, ingestedAt time.Time, start func(*rowenc.Encoder, int)) ([]byte, error) {
	if start == nil {
		return nil, nil
	}
	d := getDigester()
	defer d.put()
	start(&d.enc, len(eventColumns))
	if !d.encodeEvent(e, ingestedAt) {
		return nil, nil
	}
	sum := d.enc.Sum()
	return sum[:], nil
}

// encodeEvent encodes eventRow(e, ingestedAt)'s columns, or reports false
// when the text of a jsonb column is not known for sure.
func (d *digester) encodeEvent(e *model.Event, ingestedAt time.Time) bool {
	enc := &d.enc
	enc.String(e.Cluster)
	enc.Bytes(e.Key)
	enc.Time(e.StageAt)
	if e.ReceivedAt.IsZero() { // nullTime
		enc.Null()
	} else {
		enc.Time(e.ReceivedAt)
	}
	enc.String(e.AuditID)
	enc.String(e.Stage)
	enc.String(e.Verb)
	enc.String(e.RequestURI)
	enc.String(e.Username)
	encodeNullString(enc, e.UserUID)
	enc.Strings(nonNil(e.UserGroups))
	if !d.jsonb(e.UserExtra) {
		return false
	}
	encodeNullString(enc, e.ImpersonatedUser)
	enc.Strings(e.ImpersonatedGroups) // nil: NULL
	enc.Strings(nonNil(e.SourceIPs))
	encodeNullString(enc, e.UserAgent)
	enc.String(e.APIGroup)
	enc.String(e.APIVersion)
	enc.String(e.Resource)
	enc.String(e.Subresource)
	enc.String(e.Namespace)
	enc.String(e.Name)
	encodeNullString(enc, e.ObjectUID)
	enc.Int(int64(e.ResponseCode))
	encodeNullString(enc, e.ResponseReason)
	encodeNullString(enc, e.ResponseMessage)
	enc.SHA256(nilIfEmpty(e.RequestObject)) // json: its text as sent
	if !d.jsonb(e.Annotations) {
		return false
	}
	enc.Strings(nonNil(e.Rules))
	enc.Bool(e.SecretDigested)
	enc.Time(ingestedAt)
	return true
}

// jsonb encodes a jsonb column written from the JSON text b (nullJSON) by
// the SHA-256 of the text PostgreSQL prints for it, or reports false when
// that is not known for sure.
func (d *digester) jsonb(b []byte) bool {
	if len(b) == 0 {
		d.enc.Null()
		return true
	}
	cacheable := len(b) <= maxCachedJSONB
	if cacheable {
		if r, ok := d.jsonbSums[string(b)]; ok {
			if r.unsure {
				return false
			}
			d.enc.Bytes(r.sum[:]) // as SHA256 appends it
			return true
		}
	}
	text, err := d.printer.appendText(d.text[:0], b)
	if err != nil { // errJSONBUnsure, its only error
		if cacheable {
			d.remember(b, jsonbSum{unsure: true})
		}
		return false
	}
	d.text = text
	sum := sha256.Sum256(text)
	if cacheable {
		d.remember(b, jsonbSum{sum: sum})
	}
	d.enc.Bytes(sum[:])
	return true
}

// maxCachedJSONB and maxJSONBSums bound a digester's jsonbSums: texts of
// at most 1 KiB, 256 of them (at most 256 KiB of keys a digester).
const (
	maxCachedJSONB = 1 << 10
	maxJSONBSums   = 256
)

// A jsonbSum is what jsonb computed for a text: the SHA-256 of the text
// PostgreSQL prints for it, or that this is not known for sure.
type jsonbSum struct {
	sum    [32]byte
	unsure bool
}

// remember keeps sum for the text b, emptying the cache when it is full.
func (d *digester) remember(b []byte, sum jsonbSum) {
	if d.jsonbSums == nil || len(d.jsonbSums) >= maxJSONBSums {
		d.jsonbSums = make(map[string]jsonbSum, maxJSONBSums)
	}
	d.jsonbSums[string(b)] = sum
}

// encodeNullString encodes a text column written with nullString.
func encodeNullString(e *rowenc.Encoder, s string) {
	if s == "" {
		e.Null()
		return
	}
	e.String(s)
}

// nilIfEmpty is nullJSON's NULL: nil for an empty text.
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// A digester is what a row's digest is computed with: the row's encoder,
// a jsonb printer and its output, kept in digesters for the next row (a
// batch digests each row it writes; with them reused that allocates
// nothing), and the digests of the jsonb texts it printed last: an
// event's user_extra and annotations repeat from one event to the next
// (a client's credential, an authorizer's decision for a namespace), and
// printing them is about half of an event's digest.
type digester struct {
	enc       rowenc.Encoder
	printer   jsonbPrinter
	text      []byte
	jsonbSums map[string]jsonbSum
}

var digesters = sync.Pool{New: func() any { return new(digester) }}

func getDigester() *digester { return digesters.Get().(*digester) }

// put returns d to digesters, without a buffer that a huge row grew.
func (d *digester) put() {
	const keep = 64 << 10
	d.enc.Reset(keep)
	if cap(d.text) > keep || cap(d.printer.printed) > keep || cap(d.printer.str) > keep || cap(d.printer.keys) > keep {
		*d = digester{enc: d.enc}
	}
	digesters.Put(d)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// nullJSON hands raw JSON to pgx's json codec ([]byte is sent as is), or NULL.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
