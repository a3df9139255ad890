package history

// Short names: resolving a name a person typed (a long name, a short name
// such as app-config-3f9a2c1b, or a unique prefix of its suffix) to the
// one version of the record it names among those the caller may read.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// NameScope narrows what a name may resolve to.
type NameScope struct {
	// Namespace, when set, is the only namespace ("" the cluster scope)
	// whose versions the name may name (a namespaced request's).
	Namespace *string
	// Deletions keeps deletes only (the name of a deletion).
	Deletions bool
}

// maxNameChecks bounds the versions one short name may match, in the scope
// of the request, whose authorization is asked. Past it the short name is
// refused (give more digits) before anything is authorized, so the answer
// is the same whoever asks and whatever they may read; below it, only the
// versions the caller may read count. At least shortname.MinSuffixLen
// digits after the object's name make it rare: more than 100 versions of
// objects of one name in one namespace sharing the first 4 digits of their
// keys takes millions of versions of that name.
const maxNameChecks = 100

// maxListedCandidates is how many candidates an ambiguity lists.
const maxListedCandidates = 10

// ResolveVersion resolves name, in cluster, to the id of the version it
// names. A long name (<uid>.<64 hex digits>) is parsed, not looked up: the
// read that follows authorizes it. A short name is matched against the
// versions of the record in scope (the store selects them by key range,
// name, namespace and deletion) and only the versions the caller may get
// count: none is errs.ErrNotFound, as a hidden one is; several is an
// errs.ErrInvalid that lists those the caller may read, and says nothing of
// the others, not even how many there are. More than maxNameChecks
// candidates in scope is an errs.ErrInvalid (give more digits) whatever
// the caller may read. An authorizer that fails on a candidate fails the
// resolution, as it fails a list (a 500 that names nothing): skipping the
// candidate could resolve the name to another version than the one meant.
func (s *Service) ResolveVersion(ctx context.Context, cluster, name string, scope NameScope) (VersionID, error) {
	q, err := shortname.Parse(name)
	if err != nil {
		return VersionID{}, fmt.Errorf("%w: %w", errs.ErrInvalid, err)
	}
	if q.IsLong() {
		uid, key, _ := shortname.ParseLong(q.Long)
		return VersionID{Cluster: cluster, UID: uid, Key: key}, nil
	}
	missing := fmt.Errorf("%w: no %s named %s that you may read", errs.ErrNotFound, scope.what(), escape.Quoted(name))
	lo, hi := q.KeyRange()
	rows, err := s.reader.VersionsByKeyRange(ctx, store.KeyRangeQuery{Cluster: cluster, Lo: lo, Hi: hi,
		Readable: q.Name, Namespace: scope.Namespace, Deleted: scope.Deletions, Limit: maxNameChecks + 1})
	if err != nil {
		return VersionID{}, err
	}
	if len(rows) > maxNameChecks {
		// Before any authorization: the same answer for every caller.
		return VersionID{}, fmt.Errorf("%w: %s: give more of the hex digits after the last dash (a short name has %d)", errs.ErrInvalid, escape.Quoted(name), shortname.SuffixLen)
	}
	var found []*store.VersionRecord
	asked := map[string]error{}
	for i := range rows {
		v := &rows[i]
		// The store selected by the same rule; checked again here, where
		// the rule is.
		if !q.Matches(v.Name, hex.EncodeToString(v.Key)) || scope.Deletions && !v.Deleted ||
			scope.Namespace != nil && v.Namespace != *scope.Namespace {
			continue
		}
		// As VersionRecord asks: get on the object by name, once per object.
		k := v.APIGroup + "\x00" + v.Resource + "\x00" + v.Namespace + "\x00" + v.Name
		err, ok := asked[k]
		if !ok {
			err = s.authorize(ctx, "get", v.APIGroup, v.Resource, v.Namespace, v.Name)
			asked[k] = err
		}
		if errors.Is(err, errs.ErrForbidden) {
			continue
		}
		if err != nil {
			return VersionID{}, fmt.Errorf("resolve a short name: %w", err)
		}
		found = append(found, v)
	}
	switch len(found) {
	case 0:
		return VersionID{}, missing
	case 1:
		return VersionID{Cluster: cluster, UID: found[0].UID, Key: found[0].Key}, nil
	}
	return VersionID{}, ambiguous(name, scope, found)
}

func (sc NameScope) what() string {
	if sc.Deletions {
		return "deletion"
	}
	return "version"
}

// ambiguous is the error of a short name that names several versions the
// caller may read: each candidate by its short name (with the long name,
// which tells apart two whose short names are the same), what it is and
// when. Every recorded string in it goes through the one escape
// (api/escape): names, namespaces and users always quoted, the rest quoted
// when they hold a hidden character.
func ambiguous(name string, scope NameScope, found []*store.VersionRecord) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s names more than one %s you may read; give more of the hex digits, or the long name:", escape.Quoted(name), scope.what())
	for i, v := range found {
		if i == maxListedCandidates {
			b.WriteString("\n  ... and more: give more of the hex digits")
			break
		}
		key := hex.EncodeToString(v.Key)
		what := v.Resource
		if v.APIGroup != "" {
			what += "." + v.APIGroup
		}
		where := ""
		if v.Namespace != "" {
			where = " in " + escape.Quoted(v.Namespace)
		}
		who := ""
		if v.Username != "" {
			who = " by " + escape.Quoted(v.Username)
		}
		fmt.Fprintf(&b, "\n  %s (%s): %s %s%s, %s%s at %s", shortname.Of(v.Name, key), escape.Quote(v.UID+"."+key),
			escape.Quote(what), escape.Quoted(v.Name), where, escape.Quote(v.Verb), who, v.ChangedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return fmt.Errorf("%w: %s", errs.ErrInvalid, b.String())
}

// AttemptName is the long name of an attempt (a failed mutation): the
// primary key of its event in the events table (the cluster is the
// caller's), <stage time in unix microseconds>.<event key in hex>.
func AttemptName(at time.Time, key []byte) string {
	return shortname.Long(strconv.FormatInt(at.UnixMicro(), 10), key)
}

// ParseAttemptName reverses AttemptName: a long name (shortname.ParseLong,
// the one parser: hex digits of either case) whose prefix is a time.
func ParseAttemptName(cluster, name string) (EventID, bool) {
	at, k, ok := shortname.ParseLong(name)
	// Digits only, no leading zero: one time has one spelling.
	if !ok || len(at) > 19 || strings.Trim(at, "0123456789") != "" || at[0] == '0' && at != "0" {
		return EventID{}, false
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return EventID{}, false
	}
	return EventID{Cluster: cluster, At: time.UnixMicro(us).UTC(), Key: k}, true
}

// ResolveAttempt resolves name, in cluster, to the attempt (failed
// mutation) it names, by the rules of ResolveVersion: a long name
// (<unix microseconds>.<64 hex digits>) is parsed, not looked up (the read
// that follows authorizes it); a short name is matched against the failed
// events in scope (the store selects them by key range, name and
// namespace, from events_failed_key) and only those the caller may read
// (get on the object's resource in its namespace, as FailedMutation asks)
// count. None is errs.ErrNotFound, as a hidden one is; several is an
// errs.ErrInvalid listing only those the caller may read; more than
// maxNameChecks in scope is an errs.ErrInvalid whoever asks. Only
// scope.Namespace applies (an attempt is no deletion).
func (s *Service) ResolveAttempt(ctx context.Context, cluster, name string, scope NameScope) (EventID, error) {
	if id, ok := ParseAttemptName(cluster, name); ok {
		return id, nil
	}
	q, err := shortname.Parse(name)
	if err != nil {
		return EventID{}, fmt.Errorf("%w: %w", errs.ErrInvalid, err)
	}
	if q.IsLong() {
		return EventID{}, fmt.Errorf("%w: %w: %s: the long name of an attempt is <unix microseconds>.<event key>", errs.ErrInvalid, shortname.ErrNotAName, escape.Quoted(name))
	}
	missing := fmt.Errorf("%w: no attempt named %s that you may read", errs.ErrNotFound, escape.Quoted(name))
	lo, hi := q.KeyRange()
	rows, err := s.reader.FailedByKeyRange(ctx, store.EventKeyRange{Cluster: cluster, Lo: lo, Hi: hi,
		Readable: q.Name, Namespace: scope.Namespace, Limit: maxNameChecks + 1})
	if err != nil {
		return EventID{}, err
	}
	if len(rows) > maxNameChecks {
		// Before any authorization: the same answer for every caller.
		return EventID{}, fmt.Errorf("%w: %s: give more of the hex digits after the last dash (a short name has %d)", errs.ErrInvalid, escape.Quoted(name), shortname.SuffixLen)
	}
	f := s.ReadFilter(ctx)
	var found []*store.EventRecord
	for i := range rows {
		e := &rows[i]
		if !q.Matches(e.Name, hex.EncodeToString(e.Key)) || e.ResponseCode < 300 ||
			scope.Namespace != nil && e.Namespace != *scope.Namespace {
			continue
		}
		ok, err := f.Allowed(eventAuthzTarget(e))
		if err != nil {
			return EventID{}, fmt.Errorf("resolve a short name: %w", err)
		}
		if ok {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return EventID{}, missing
	case 1:
		return EventID{Cluster: cluster, At: found[0].At.UTC(), Key: found[0].Key}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s names more than one attempt you may read; give more of the hex digits, or the long name:", escape.Quoted(name))
	for i, e := range found {
		if i == maxListedCandidates {
			b.WriteString("\n  ... and more: give more of the hex digits")
			break
		}
		what := e.Resource
		if e.APIGroup != "" {
			what += "." + e.APIGroup
		}
		where := ""
		if e.Namespace != "" {
			where = " in " + escape.Quoted(e.Namespace)
		}
		fmt.Fprintf(&b, "\n  %s (%s): %s %s%s, %s by %s refused %d at %s", shortname.Of(e.Name, hex.EncodeToString(e.Key)),
			AttemptName(e.At, e.Key), escape.Quote(what), escape.Quoted(e.Name), where, escape.Quote(e.Verb),
			escape.Quoted(e.Username), e.ResponseCode, e.At.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return EventID{}, fmt.Errorf("%w: %s", errs.ErrInvalid, b.String())
}
