package history

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// The JSON documents of the API. The OpenAPI schemas are derived from these
// types (field names from the json tags, descriptions from the doc tags).

// Page is a page of a list; Next is the cursor of the next page, empty on
// the last one.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty" doc:"opaque cursor: pass it as ?cursor= for the next page; given only when an item the caller may read follows this page within the page's scan (5000 rows), so a page never tells of rows the caller may not read"`
}

// Actor is who made a change, as the apiserver's audit event says.
type Actor struct {
	Username           string   `json:"username" doc:"the authenticated caller"`
	Groups             []string `json:"groups,omitempty"`
	ImpersonatedUser   string   `json:"impersonatedUser,omitempty" doc:"the identity the caller acted as"`
	ImpersonatedGroups []string `json:"impersonatedGroups,omitempty"`
	SourceIPs          []string `json:"sourceIPs,omitempty" doc:"client-influenced (X-Forwarded-For): evidence, not proof"`
	UserAgent          string   `json:"userAgent,omitempty" doc:"client-influenced"`
	AuditID            string   `json:"auditID,omitempty" doc:"the request's audit ID (client-settable: not unique)"`
}

// Version is one recorded state of an object: after a change, or as a
// baseline observation.
type Version struct {
	ID              string      `json:"id" doc:"<uid>/<versionKey>: names the version in ?against= and plans"`
	ShortName       string      `json:"shortName" doc:"the name a person types (app-config-3f9a2c1b): the object's name and the first digits of versionKey; GET /clusters/{cluster}/versions/{name} and ?against= take it, or a unique prefix of its digits"`
	Cluster         string      `json:"cluster"`
	UID             string      `json:"uid"`
	VersionKey      string      `json:"versionKey" doc:"hex SHA-256 identifying the version within the object"`
	ResourceVersion string      `json:"resourceVersion,omitempty" doc:"metadata.resourceVersion after the change; absent when unknown (a delete answered by a Status)"`
	Origin          string      `json:"origin" doc:"change, baseline (a LIST observed it) or admission (an admission review showed it just before a write, confirmed by that write's audit event)"`
	Verb            string      `json:"verb" doc:"create, update, patch, delete, deletecollection, or baseline"`
	ChangedAt       time.Time   `json:"changedAt" doc:"the apiserver's stageTimestamp of the change"`
	Group           string      `json:"group"`
	APIVersion      string      `json:"apiVersion"`
	Kind            string      `json:"kind,omitempty"`
	Resource        string      `json:"resource"`
	Subresource     string      `json:"subresource,omitempty"`
	Namespace       string      `json:"namespace,omitempty"`
	Name            string      `json:"name"`
	Created         bool        `json:"created,omitempty" doc:"this change created the object"`
	Deleted         bool        `json:"deleted,omitempty" doc:"the object is gone after this change"`
	Complete        bool        `json:"complete" doc:"the version holds the full state (false: e.g. a /scale write)"`
	HasState        bool        `json:"hasState" doc:"the version holds a state that can be restored (for a delete: the last state)"`
	SecretDigested  bool        `json:"secretDigested,omitempty" doc:"Secret values are digests (HMAC-SHA256): this version cannot be restored"`
	Stale           bool        `json:"stale,omitempty" doc:"a subresource write changed the object after this state without recording it"`
	Actor           *Actor      `json:"actor,omitempty" doc:"absent for a baseline"`
	InitiatedBy     string      `json:"initiatedBy,omitempty" doc:"for a delete by the namespace controller or the garbage collector: the user whose namespace or owner deletion started it"`
	InitiatedVia    string      `json:"initiatedVia,omitempty" doc:"namespace-deletion or owner-deletion"`
	InitiatedObject *ObjectRef  `json:"initiatedObject,omitempty" doc:"the object whose deletion started the cascade (its namespace or owner)"`
	Links           paths.Links `json:"links"`
	// Object is the state (for a delete: the last state, when known).
	Object json.RawMessage `json:"object,omitempty" doc:"the object after the change (for a delete: its last state); only in single-version answers"`
}

// BaselineAuthor names the author of a baseline (a version the record
// took itself, no one's change) wherever a message names who made a
// version: one word for every message.
const BaselineAuthor = "(baseline)"

// AdmissionAuthor names the author of a version an admission review showed
// the record (the state before a write, confirmed by its audit event).
const AdmissionAuthor = "(admission)"

// Author is who made v in a message: its user, or BaselineAuthor
// (AdmissionAuthor for a version an admission review showed).
func (v *Version) Author() string {
	if (v.Actor == nil || v.Actor.Username == "") && v.Origin == "admission" {
		return AdmissionAuthor
	}
	if v.Actor == nil || v.Actor.Username == "" {
		return BaselineAuthor
	}
	return v.Actor.Username
}

// Deletion is a successful delete, with the user action that started a
// cascade (namespace deletion, owner deletion) where the record shows it.
type Deletion struct {
	Version
	InitiatedAt *time.Time `json:"initiatedAt,omitempty" doc:"when the action that started its cascade happened"`
	// RestoreFrom is the version holding the last state: restore it to
	// bring the object back.
	RestoreFrom *paths.Links `json:"restoreFrom,omitempty" doc:"the version holding the object's last state; POST its restore link to bring it back"`
	// StateUnknown: the record holds no state from before the deletion.
	StateUnknown bool `json:"stateUnknown,omitempty" doc:"the record holds no state from before the deletion (a delete logged at Metadata, no earlier version): nothing to restore"`
	// StateKey is the key of that version.
	StateKey string `json:"-"`
}

// Event is a kept audit event: a failed mutation, or one action of a user.
type Event struct {
	At            time.Time       `json:"at"`
	Verb          string          `json:"verb"`
	RequestURI    string          `json:"requestURI"`
	Actor         Actor           `json:"actor"`
	Group         string          `json:"group"`
	APIVersion    string          `json:"apiVersion"`
	Resource      string          `json:"resource"`
	Subresource   string          `json:"subresource,omitempty"`
	Namespace     string          `json:"namespace,omitempty"`
	Name          string          `json:"name,omitempty"`
	UID           string          `json:"uid,omitempty"`
	Code          int32           `json:"code" doc:"HTTP status the apiserver answered"`
	Reason        string          `json:"reason,omitempty"`
	Message       string          `json:"message,omitempty"`
	RequestObject json.RawMessage `json:"requestObject,omitempty" doc:"the attempted request body (failed mutations)"`
	Versions      []string        `json:"versions,omitempty" doc:"paths of the versions this event recorded"`
	LongName      string          `json:"longName,omitempty" doc:"a failed mutation's name: <stage time in unix microseconds>.<event key in hex>"`
	ShortName     string          `json:"shortName,omitempty" doc:"a failed mutation's short name (app-config-3f9a2c1b): the object's name and the first digits of its event key; GET /clusters/{cluster}/failed-mutations/{attempt} takes it, or a unique prefix of its digits, or longName"`
	// Key is the event's key: with At, it names the event (EventID).
	Key []byte `json:"-"`
}

// DiffChange is one difference between two states, at a JSON pointer.
type DiffChange struct {
	Op   string `json:"op" doc:"add, remove or replace"`
	Path string `json:"path" doc:"JSON pointer (RFC 6901) into the object"`
	From any    `json:"from,omitempty" doc:"the value before (remove, replace)"`
	To   any    `json:"to,omitempty" doc:"the value after (add, replace)"`
}

// DiffResult is the diff between two versions.
type DiffResult struct {
	From          *Version     `json:"from,omitempty" doc:"absent when the object did not exist before (a create)"`
	To            *Version     `json:"to"`
	IncludeStatus bool         `json:"includeStatus"`
	Ignored       []string     `json:"ignored" doc:"server-set fields left out of the comparison"`
	Changes       []DiffChange `json:"changes"`
}

// versionOf converts a stored version.
//
// It leaves out who started a cascade: VersionAsRead adds it, for versions
// the history service loaded (which tells it only to readers of the object
// whose deletion started the cascade).
func VersionOf(v *store.VersionRecord) Version {
	out := Version{
		ID:         v.UID + "/" + hex.EncodeToString(v.Key),
		ShortName:  shortname.Of(v.Name, hex.EncodeToString(v.Key)),
		Cluster:    v.Cluster,
		UID:        v.UID,
		VersionKey: hex.EncodeToString(v.Key),
		Origin:     v.Origin, Verb: v.Verb, ChangedAt: v.ChangedAt.UTC(),
		Group: v.APIGroup, APIVersion: v.APIVersion, Kind: v.Kind, Resource: v.Resource,
		Subresource: v.Subresource, Namespace: v.Namespace, Name: v.Name,
		Created: v.Created, Deleted: v.Deleted, Complete: v.Complete, HasState: v.HasState(),
		SecretDigested: v.SecretDigested, Stale: v.Stale,
		Links: paths.LinksFor(v.Cluster, v.UID, v.Key),
	}
	if v.ResourceVersion != nil {
		out.ResourceVersion = strconv.FormatInt(*v.ResourceVersion, 10)
	}
	if v.Username != "" {
		out.Actor = &Actor{
			Username: v.Username, Groups: v.UserGroups, ImpersonatedUser: v.ImpersonatedUser,
			ImpersonatedGroups: v.ImpersonatedGroups, SourceIPs: v.SourceIPs, UserAgent: v.UserAgent, AuditID: v.AuditID,
		}
	}
	if len(v.Object) > 0 {
		out.Object = json.RawMessage(v.Object)
	}
	return out
}

func eventOf(e *store.EventRecord) Event {
	out := Event{
		At: e.At.UTC(), Verb: e.Verb, RequestURI: e.RequestURI,
		Actor: Actor{Username: e.Username, Groups: e.UserGroups, ImpersonatedUser: e.ImpersonatedUser,
			ImpersonatedGroups: e.ImpersonatedGroups, SourceIPs: e.SourceIPs, UserAgent: e.UserAgent, AuditID: e.AuditID},
		Group: e.APIGroup, APIVersion: e.APIVersion, Resource: e.Resource, Subresource: e.Subresource,
		Namespace: e.Namespace, Name: e.Name, UID: e.ObjectUID,
		Code: e.ResponseCode, Reason: e.ResponseReason, Message: e.ResponseMessage,
		Key: e.Key,
	}
	if len(e.RequestObject) > 0 {
		out.RequestObject = json.RawMessage(e.RequestObject)
	}
	if e.ResponseCode >= 300 {
		out.LongName = AttemptName(e.At, e.Key)
		out.ShortName = shortname.Of(e.Name, hex.EncodeToString(e.Key))
	}
	for _, id := range e.Versions {
		if i := strings.LastIndexByte(id, '/'); i > 0 {
			out.Versions = append(out.Versions, paths.VersionPath(e.Cluster, id[:i], id[i+1:]))
		}
	}
	return out
}

// VersionAsRead is VersionOf with who started the version's cascade, as
// the history service loaded it for its caller: a version from the
// service's lookups has had the cascade's author left out unless the
// caller may read the object whose deletion started it.
func VersionAsRead(v *store.VersionRecord) Version {
	out := VersionOf(v)
	out.InitiatedBy, out.InitiatedVia = v.InitiatedBy, v.InitiatedVia
	if i := v.Initiator; i != nil && v.InitiatedBy != "" {
		out.InitiatedObject = &ObjectRef{Group: i.Group, Resource: i.Resource, Namespace: i.Namespace, Name: i.Name}
	}
	return out
}

// ObjectRef names an object of the record.
type ObjectRef struct {
	Group     string `json:"group,omitempty" doc:"API group (empty: core)"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}
