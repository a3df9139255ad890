package reads

// The SQL of each query shape, for the EXPLAIN tests of package reads_test
// (which write their rows through package store, which imports this one).
var (
	ChangesSQL   = changesSQL
	DeletionsSQL = deletionsSQL
	EventsSQL    = eventsSQL
	AsOfMetaSQL  = asOfMetaSQL

	EventActorSQL     = eventActorSQL
	CascadeSQL        = cascadeSQL
	FailedMutationSQL = failedMutationSQL
	VersionByKeySQL   = versionByKeySQL
	StateBeforeSQL    = stateBeforeSQL
	NewestByNameSQL   = newestByNameSQL
	AsOfSQL           = asOfSQL
	VersionsByKeySQL  = versionsByKeyRangeSQL
	ReadableNameSQL   = readableNameSQL
	FailedByKeySQL    = failedByKeyRangeSQL
	ReadableEventSQL  = readableEventNameSQL
)
