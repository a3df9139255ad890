package store

import "github.com/options-record/options-record/store/reads"

// The types of the Store's reads (package store/reads), under the names
// the callers of the Store use.
type (
	VersionRecord = reads.VersionRecord
	ObjectRef     = reads.ObjectRef
	Cursor        = reads.Cursor
	ChangeQuery   = reads.ChangeQuery
	GroupResource = reads.GroupResource
	AsOfQuery     = reads.AsOfQuery
	KeyRangeQuery = reads.KeyRangeQuery
	EventKeyRange = reads.EventKeyRangeQuery
	Deletion      = reads.Deletion
	DeletionQuery = reads.DeletionQuery
	EventRecord   = reads.EventRecord
	EventQuery    = reads.EventQuery
	EventKey      = reads.EventKey
)

// ObjectID names a version's object in the answer of Objects.
func ObjectID(uid string, key []byte) string { return reads.ObjectID(uid, key) }
