package model

import (
	"context"
	"time"
)

// Event is one row of the events table: a kept audit event.
type Event struct {
	Cluster            string
	Key                []byte // SHA-256 of the event's identity
	StageAt            time.Time
	ReceivedAt         time.Time
	AuditID            string
	Stage              string
	Verb               string
	RequestURI         string
	Username           string
	UserUID            string
	UserGroups         []string
	UserExtra          []byte // JSON object or nil
	ImpersonatedUser   string
	ImpersonatedGroups []string
	SourceIPs          []string
	UserAgent          string
	APIGroup           string
	APIVersion         string
	Resource           string
	Subresource        string
	Namespace          string
	Name               string
	ObjectUID          string
	ResponseCode       int32
	ResponseReason     string
	ResponseMessage    string
	RequestObject      []byte // JSON or nil
	Annotations        []byte // JSON object or nil
	Rules              []string
	SecretDigested     bool
	// Notify are the destinations the versions of this event are sent to
	// (the rules' routes that select its verb); not a column: the store
	// writes one notification_outbox row per stored version and route.
	Notify []Route
}

// Route names a destination a rule sends a change to.
type Route struct {
	Rule        string // "namespace/name"
	Destination string
}

// Origin says where a version comes from.
type Origin string

// Origins of a version.
const (
	OriginChange   Origin = "change"
	OriginBaseline Origin = "baseline"
	// OriginAdmission: the state an admission review showed just before a
	// write (oldObject), confirmed by that write's audit event.
	OriginAdmission Origin = "admission"
)

// Version is one row of object_versions: the state of one object after a
// change, or as observed by a baseline LIST.
type Version struct {
	Cluster         string
	UID             string
	Key             []byte // SHA-256 of (event key, uid) or of the baseline observation
	ResourceVersion *int64 // nil when unknown
	Origin          Origin
	Verb            string
	ChangedAt       time.Time
	EventKey        []byte // nil for a baseline
	APIGroup        string
	APIVersion      string
	Kind            string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Created         bool
	Deleted         bool
	Complete        bool
	Object          []byte // JSON or nil
	// ObjectExact is the state as the apiserver sent it, when Object had to
	// differ from it (characters PostgreSQL cannot read; see pgSafe); nil
	// otherwise.
	ObjectExact    []byte
	SecretDigested bool
	Rules          []string
}

// Batch is what one webhook request (or one import chunk) stores: its events
// and the versions derived from them. It is written in one transaction.
type Batch struct {
	Events   []Event
	Versions []Version
	// Retained is set by a Writer that returns while it may still read the
	// batch (the journal, when it stops waiting for a slow store at its
	// deadline and journals the batch instead): the memory the batch's
	// strings and objects point into must not be reused then. It is set
	// before WriteBatch returns, by the goroutine that called it.
	Retained bool
	// Source names the audit source the batch came from (webhook,
	// firehose, pubsub, eventhubs; "": none, as import). Not a column: the
	// journal keeps it so that its drain can record that source's progress
	// once the batch is stored (see WriteResult.Journaled).
	Source string
}

// Writer stores one batch durably, in one transaction, and returns only
// after it is committed. The Store is one; the journal in front of it
// (package auditsink/journal) is another, and writes through one. The ingest pipeline
// and the importer take a Writer, so either can stand behind them.
type Writer interface {
	WriteBatch(ctx context.Context, b *Batch) (WriteResult, error)
}

// WriteResult counts what a write stored and what it found already stored.
type WriteResult struct {
	Events          int // events inserted
	Versions        int // versions inserted
	DuplicateEvents int // events already stored (a redelivered batch)
	NoopVersions    int // changes that left the object as an already stored version
	Notifications   int // notification outbox rows queued (see Event.Notify)
	Confirmed       int // admission observations the events named, now versions
	// Journaled: the batch is durable in the journal, not yet stored (the
	// store was down or slow); the counts are zero, and nothing may claim
	// its events are in the record (source_progress) until its drain.
	Journaled bool
}
