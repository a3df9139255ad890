package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model/jsonfast"
)

// Reasons for which a kept event yields no version, or is skipped. They are
// Prometheus label values.
const (
	skipNoUID          = "no_uid"
	skipBadObject      = "bad_response_object"
	skipBadRV          = "bad_resource_version"
	skipNoListInResult = "deletecollection_without_list"
)

// objectMeta is the part of a response object the record needs.
type objectMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name                       string   `json:"name"`
		Namespace                  string   `json:"namespace"`
		UID                        string   `json:"uid"`
		ResourceVersion            string   `json:"resourceVersion"`
		DeletionTimestamp          *string  `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64   `json:"deletionGracePeriodSeconds"`
		Finalizers                 []string `json:"finalizers"`
	} `json:"metadata"`
	Spec struct {
		Finalizers []string `json:"finalizers"` // Namespace
	} `json:"spec"`
	Details *struct { // Status
		Name string `json:"name"`
		Kind string `json:"kind"`
		UID  string `json:"uid"`
	} `json:"details"`
	Items []json.RawMessage `json:"items"` // a List (deletecollection)
}

// notTheObject are the kinds a write answers with that are not the written
// object itself: the object changed, but its new full state is unknown.
var notTheObject = map[string]bool{
	"Status": true, "Scale": true, "PartialObjectMetadata": true, "PartialObjectMetadataList": true,
	"Table": true, "Eviction": true, "Binding": true, "TokenRequest": true,
}

// Converted is what one kept audit event becomes.
type Converted struct {
	Event    Event
	Versions []Version
	// Skips are the reasons (Prometheus label values) for versions that
	// could not be derived.
	Skips []string
	// Sanitized: values PostgreSQL cannot store or read as jsonb (NUL,
	// invalid UTF-8, unpaired surrogate escapes) were replaced with U+FFFD.
	Sanitized bool
	// err is a failure of a version, returned by Convert.
	err error
}

// Selection is what the rules decided for a kept event.
type Selection struct {
	// Rules name the rules that kept it.
	Rules []string
	// RecordSecretData keeps Secret values in clear (a rule asks for it).
	RecordSecretData bool
	// Notify are the destinations the event's changes are sent to.
	Notify []Route
}

// Convert turns a kept audit event into rows. It digests Secret values with
// dg unless the selection allows recording them.
func Convert(cluster string, ev *auditv1.Event, d Selection, dg *SecretDigester) (Converted, error) {
	c, err := convertRaw(cluster, ev, d, dg)
	if err == nil {
		err = c.err
	}
	if err == nil {
		c.Sanitized = c.pgSafe() || c.Sanitized
	}
	return c, err
}

// convertRaw reads top to bottom: the event's row (who did what, the
// answer, the annotations and the request body kept), then the versions
// its response object gives.
func convertRaw(cluster string, ev *auditv1.Event, d Selection, dg *SecretDigester) (Converted, error) {
	var c Converted
	if ev.ObjectRef == nil {
		return c, errors.New("event has no objectRef")
	}
	ref := ev.ObjectRef
	digest := ref.APIGroup == "" && ref.Resource == "secrets" && !d.RecordSecretData
	if digest && dg == nil {
		return c, ErrNoDigester
	}
	var pd *placeDigester // the Secret's digests, when the event is about one
	if digest {
		at := dg.at(SecretPlace{cluster, ref.Namespace, ref.Name})
		pd = &at
	}
	c.Event = newEvent(cluster, ev, d.Rules, digest)
	c.Event.Notify = d.Notify
	c.addUser(ev)
	echoed := c.echoedSecretValues(ev, digest)
	c.addAnswer(ev, echoed)
	c.addAnnotations(ev, pd, echoed)
	c.addRequestObject(ev, pd)
	meta, ok := c.responseMeta(ev)
	if !ok {
		c.addUnbodiedChange(ev)
		return c, nil
	}
	c.addVersions(ev, &meta, d, dg)
	return c, nil
}

// newEvent is the event's row as far as the envelope says it as is.
func newEvent(cluster string, ev *auditv1.Event, rules []string, digest bool) Event {
	ref := ev.ObjectRef
	return Event{
		Cluster:        cluster,
		Key:            EventKey(cluster, ev),
		StageAt:        ev.StageTimestamp.Time,
		ReceivedAt:     ev.RequestReceivedTimestamp.Time,
		AuditID:        string(ev.AuditID),
		Stage:          string(ev.Stage),
		Verb:           ev.Verb,
		RequestURI:     ev.RequestURI,
		Username:       ev.User.Username,
		UserUID:        ev.User.UID,
		UserGroups:     ev.User.Groups,
		SourceIPs:      ev.SourceIPs,
		UserAgent:      ev.UserAgent,
		APIGroup:       ref.APIGroup,
		APIVersion:     ref.APIVersion,
		Resource:       ref.Resource,
		Subresource:    ref.Subresource,
		Namespace:      ref.Namespace,
		Name:           ref.Name,
		ObjectUID:      string(ref.UID),
		Rules:          rules,
		SecretDigested: digest,
		ResponseCode:   responseCode(ev),
	}
}

// addUser records the user's extras (as JSON) and whom they impersonated.
func (c *Converted) addUser(ev *auditv1.Event) {
	e := &c.Event
	if len(ev.User.Extra) > 0 {
		e.UserExtra, _ = json.Marshal(ev.User.Extra)
		for k, vs := range ev.User.Extra {
			c.Sanitized = c.Sanitized || !utf8.ValidString(k) || !validStrings(vs) // json.Marshal replaced it
		}
	}
	if ev.ImpersonatedUser != nil {
		e.ImpersonatedUser = ev.ImpersonatedUser.Username
		e.ImpersonatedGroups = ev.ImpersonatedUser.Groups
		if e.ImpersonatedGroups == nil {
			e.ImpersonatedGroups = []string{}
		}
	}
}

// echoedSecretValues are what a refusal of a write to a Secret may echo:
// the values sent (an admission webhook's or a validating policy's message
// can quote them).
func (c *Converted) echoedSecretValues(ev *auditv1.Event, digest bool) []string {
	if digest && ev.RequestObject != nil && (c.Event.ResponseCode >= 300 || len(ev.Annotations) > 0) {
		return secretValues(ev.RequestObject.Raw)
	}
	return nil
}

// addAnswer records the answer's reason and message, without the Secret
// values it echoes.
func (c *Converted) addAnswer(ev *auditv1.Event, echoed []string) {
	if ev.ResponseStatus != nil {
		c.Event.ResponseReason = string(ev.ResponseStatus.Reason)
		c.Event.ResponseMessage = scrubSecretValues(ev.ResponseStatus.Message, echoed)
	}
}

// addAnnotations records the annotations as JSON; about a Secret (pd), with
// its values digested and the echoed ones scrubbed.
func (c *Converted) addAnnotations(ev *auditv1.Event, pd *placeDigester, echoed []string) {
	if len(ev.Annotations) == 0 {
		return
	}
	ann := ev.Annotations
	if pd != nil {
		ann = pd.annotations(ann)
		if len(echoed) > 0 {
			scrubbed := make(map[string]string, len(ann))
			for k, v := range ann {
				scrubbed[k] = scrubSecretValues(v, echoed)
			}
			ann = scrubbed
		}
	}
	c.Event.Annotations, _ = json.Marshal(ann)
	for k, v := range ev.Annotations {
		c.Sanitized = c.Sanitized || !utf8.ValidString(k) || !utf8.ValidString(v) // json.Marshal replaced it
	}
}

// addRequestObject records the request body where it adds to the record
// (keepRequestObject), without credentials or managedFields; about a
// Secret (pd), digested.
func (c *Converted) addRequestObject(ev *auditv1.Event, pd *placeDigester) {
	if !keepRequestObject(ev, c.Event.ResponseCode) {
		return
	}
	raw := withoutManagedFields(withoutCredentials(ev.ObjectRef, ev.RequestObject.Raw))
	// The decoder skipped the objects without validating them
	// (auditsink/decode's wire.go); what PostgreSQL's json column would
	// refuse is not stored. jsonfast.Valid judges as encoding/json.Valid
	// does (sonic.Valid takes truncated literals and malformed escapes).
	switch {
	case !jsonfast.Default.Valid(raw):
		raw = nil
		c.Sanitized = true
	case pd != nil:
		raw = pd.request(raw)
	}
	c.Event.RequestObject = raw
}

// responseMeta reads what the record needs of the response object. An
// event without one gives no version (false) but a delete's whose event
// names the uid (objectRef.uid: the apiserver fills it from the request
// body's metadata only, so a DeleteOptions body never tells it; see
// addUnbodiedChange for the rest); one whose object does not decode is
// skipped and counted.
func (c *Converted) responseMeta(ev *auditv1.Event) (objectMeta, bool) {
	e := &c.Event
	if e.ResponseCode >= 300 || ev.ResponseObject == nil || len(ev.ResponseObject.Raw) == 0 {
		if e.ResponseCode < 300 && ev.ResponseObject == nil && ev.Verb == "delete" && ev.ObjectRef.UID != "" {
			// A delete whose response the policy did not record, whose
			// event still names the uid.
			c.Versions = append(c.Versions, deletedVersion(e, string(ev.ObjectRef.UID), ev))
		}
		return objectMeta{}, false
	}
	// managedFields cut first (in place, as addObjectVersion would): the
	// decoder, which validates every byte it skips, then reads half as
	// much of a state that carries them.
	ev.ResponseObject.Raw = withoutManagedFields(ev.ResponseObject.Raw)
	var meta objectMeta
	if err := jsonfast.Default.Unmarshal(ev.ResponseObject.Raw, &meta); err != nil {
		c.Skips = append(c.Skips, skipBadObject)
		return objectMeta{}, false
	}
	return meta, true
}

// addVersions records the versions the response object meta gives: one per
// item of a deletecollection's List, a deletion answered with a Status, a
// stale mark where the answer is not the object's full state, else the
// object's new state.
func (c *Converted) addVersions(ev *auditv1.Event, meta *objectMeta, d Selection, dg *SecretDigester) {
	e, ref := &c.Event, ev.ObjectRef
	switch {
	case ev.Verb == "deletecollection":
		c.addListVersions(ev, meta, d, dg)
	case ev.Verb == "delete" && meta.Kind == "Status":
		uid := string(ref.UID)
		if meta.Details != nil && meta.Details.UID != "" {
			uid = meta.Details.UID
		}
		if uid == "" {
			c.Skips = append(c.Skips, skipNoUID)
			return
		}
		c.Versions = append(c.Versions, deletedVersion(e, uid, ev))
	case notTheObject[meta.Kind] || meta.Metadata.UID == "" || meta.Metadata.Name != ref.Name && ref.Name != "":
		c.addStaleVersion(ev, meta)
	default:
		c.addObjectVersion(e, ev, meta, ev.ResponseObject.Raw, !d.RecordSecretData, dg)
	}
}

// addListVersions records the items of the List a deletecollection
// answered with.
func (c *Converted) addListVersions(ev *auditv1.Event, list *objectMeta, d Selection, dg *SecretDigester) {
	if list.Items == nil {
		c.Skips = append(c.Skips, skipNoListInResult)
		return
	}
	// The items of a List carry no apiVersion and kind of their own
	// (the namespace controller's deletecollection answers a
	// ConfigMapList, ...): they are the List's, without "List".
	itemAPIVersion, itemKind := listItemType(list, ev.ObjectRef)
	for _, item := range list.Items {
		var im objectMeta
		if err := jsonfast.Default.Unmarshal(item, &im); err != nil {
			c.Skips = append(c.Skips, skipBadObject)
			continue
		}
		if im.Kind == "PartialObjectMetadata" {
			c.addMetadataVersion(&c.Event, &im, itemAPIVersion, itemKind)
			continue
		}
		item = withTypeMeta(item, &im, itemAPIVersion, itemKind)
		c.addObjectVersion(&c.Event, ev, &im, item, !d.RecordSecretData, dg)
	}
}

// addStaleVersion records that the object changed but the answer is not its
// full state (e.g. a /scale write answers a Scale): the last full version
// is stale from here on.
func (c *Converted) addStaleVersion(ev *auditv1.Event, meta *objectMeta) {
	e, ref := &c.Event, ev.ObjectRef
	uid := meta.Metadata.UID
	if meta.Kind == "Status" || meta.Metadata.Name != ref.Name {
		uid = string(ref.UID)
	}
	if uid == "" {
		c.Skips = append(c.Skips, skipNoUID)
		return
	}
	v := baseVersion(e, uid)
	v.Complete = false
	// The garbage collector removes finalizers through the metadata
	// API: the last one removed, the object is gone.
	v.Deleted = meta.Kind == "PartialObjectMetadata" && removedLastFinalizer(meta) && gone(meta)
	if meta.Kind == "Scale" || meta.Kind == "PartialObjectMetadata" {
		rv, err := parseRV(meta.Metadata.ResourceVersion)
		if err != nil {
			c.Skips = append(c.Skips, skipBadRV)
			return
		}
		v.ResourceVersion = rv
	}
	if v.ResourceVersion == nil {
		return // nothing orders it: say nothing rather than guess
	}
	v.Key = versionKey(e.Key, uid)
	c.Versions = append(c.Versions, v)
}

// addObjectVersion records raw (the object in a response) as the state after
// the change. Secrets are digested unless recordSecrets.
func (c *Converted) addObjectVersion(e *Event, ev *auditv1.Event, meta *objectMeta, raw []byte, redactSecrets bool, dg *SecretDigester) {
	v, ok := c.objectVersion(e, meta)
	if !ok {
		return
	}
	v.APIVersion, v.Kind = splitAPIVersion(meta.APIVersion, v.APIVersion), meta.Kind
	v.Created = ev.ObjectRef.Subresource == "" && (ev.Verb == "create" || e.ResponseCode == 201)
	if ev.Verb == "delete" || ev.Verb == "deletecollection" || removedLastFinalizer(meta) {
		v.Deleted = gone(meta)
	}
	// A full state is only one that can be given back: a Kubernetes object.
	// A response without its type or name is kept as data, not as a state
	// to restore.
	v.Complete = meta.APIVersion != "" && meta.Kind != "" && meta.Metadata.Name != ""
	v.SecretDigested = false
	raw = withoutManagedFields(raw)
	if redactSecrets && (e.SecretDigested || meta.Kind == "Secret" && meta.APIVersion == "v1") {
		if dg == nil {
			c.err = ErrNoDigester
			return
		}
		raw = dg.at(SecretPlace{e.Cluster, meta.Metadata.Namespace, meta.Metadata.Name}).object(raw)
		v.SecretDigested = true
	}
	v.Object = raw // the text the apiserver sent (json keeps it as is), without managedFields
	c.Versions = append(c.Versions, v)
}

// addMetadataVersion records the deletion of an item a deletecollection
// answered with its metadata only: a PartialObjectMetadataList (the
// metadata API), or a List the webhook cut to its items' metadata because
// it was too large to hold (auditsink). The version has no state (its
// last full state is the newest one recorded before it) but says which
// object went, and when.
func (c *Converted) addMetadataVersion(e *Event, meta *objectMeta, apiVersion, kind string) {
	v, ok := c.objectVersion(e, meta)
	if !ok {
		return
	}
	if kind != "" && kind != "PartialObjectMetadata" {
		v.APIVersion, v.Kind = splitAPIVersion(apiVersion, v.APIVersion), kind
	}
	v.Deleted = gone(meta)
	v.Complete = false
	c.Versions = append(c.Versions, v)
}

// objectVersion is the version of the object meta describes (its uid,
// resourceVersion, namespace and name), changed by e; an object without a
// uid or with a bad resourceVersion is skipped and counted (false).
func (c *Converted) objectVersion(e *Event, meta *objectMeta) (Version, bool) {
	if meta.Metadata.UID == "" {
		c.Skips = append(c.Skips, skipNoUID)
		return Version{}, false
	}
	rv, err := parseRV(meta.Metadata.ResourceVersion)
	if err != nil {
		c.Skips = append(c.Skips, skipBadRV)
		return Version{}, false
	}
	v := baseVersion(e, meta.Metadata.UID)
	v.Key = versionKey(e.Key, meta.Metadata.UID)
	v.ResourceVersion = rv
	v.Namespace, v.Name = meta.Metadata.Namespace, meta.Metadata.Name
	return v, true
}

// listItemType is the apiVersion and kind of the items of a List answered
// by a deletecollection: the List's apiVersion (else the objectRef's group
// and version) and its kind without the "List" suffix ("" when the List does
// not say).
func listItemType(list *objectMeta, ref *auditv1.ObjectReference) (apiVersion, kind string) {
	apiVersion = list.APIVersion
	if apiVersion == "" && ref.APIVersion != "" {
		apiVersion = ref.APIVersion
		if ref.APIGroup != "" {
			apiVersion = ref.APIGroup + "/" + ref.APIVersion
		}
	}
	if k, ok := strings.CutSuffix(list.Kind, "List"); ok {
		kind = k
	}
	return apiVersion, kind
}

// withTypeMeta returns the object raw with apiVersion and kind set where it
// lacks them, and updates m to match. The object's own text follows
// unchanged, so its other fields keep the form the apiserver sent.
func withTypeMeta(raw []byte, m *objectMeta, apiVersion, kind string) []byte {
	var head []byte
	if m.APIVersion == "" && apiVersion != "" {
		b, _ := json.Marshal(apiVersion)
		head = append(append(head, `"apiVersion":`...), b...)
		m.APIVersion = apiVersion
	}
	if m.Kind == "" && kind != "" {
		b, _ := json.Marshal(kind)
		if len(head) > 0 {
			head = append(head, ',')
		}
		head = append(append(head, `"kind":`...), b...)
		m.Kind = kind
	}
	body := bytes.TrimLeft(raw, " \t\r\n")
	if len(head) == 0 || len(body) == 0 || body[0] != '{' {
		return raw
	}
	rest := bytes.TrimLeft(body[1:], " \t\r\n")
	out := make([]byte, 0, len(raw)+len(head)+1)
	out = append(append(out, '{'), head...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func baseVersion(e *Event, uid string) Version {
	ns := e.Namespace
	if e.APIGroup == "" && e.Resource == "namespaces" {
		// The apiserver audits a request for a Namespace in that namespace
		// itself; the object is cluster-scoped.
		ns = ""
	}
	return Version{
		Cluster:        e.Cluster,
		UID:            uid,
		Origin:         OriginChange,
		Verb:           e.Verb,
		ChangedAt:      e.StageAt,
		EventKey:       e.Key,
		APIGroup:       e.APIGroup,
		APIVersion:     e.APIVersion,
		Resource:       e.Resource,
		Subresource:    e.Subresource,
		Namespace:      ns,
		Name:           e.Name,
		SecretDigested: e.SecretDigested,
		Rules:          e.Rules,
	}
}

func deletedVersion(e *Event, uid string, ev *auditv1.Event) Version {
	v := baseVersion(e, uid)
	v.Key = versionKey(e.Key, uid)
	v.Deleted = true
	v.Complete = false
	return v
}

// gone reports whether a deleted object left the store with this request,
// rather than waiting for finalizers or a grace period.
// removedLastFinalizer says whether an update or patch answered an object
// being deleted (deletionTimestamp set) that has no finalizer left: the
// write removed the last one, and the apiserver deleted the object with it.
// No delete event follows.
func removedLastFinalizer(m *objectMeta) bool {
	return m.Metadata.DeletionTimestamp != nil && len(m.Metadata.Finalizers) == 0
}

// A Namespace is held by spec.finalizers while the namespace controller
// empties it; the controller's last step (PUT namespaces/X/finalize)
// empties them, and the apiserver deletes the Namespace with that write,
// answering it as sent: still phase Terminating. So the finalizer lists
// decide, not the phase.
func gone(m *objectMeta) bool {
	if len(m.Metadata.Finalizers) > 0 || len(m.Spec.Finalizers) > 0 {
		return false
	}
	return m.Metadata.DeletionGracePeriodSeconds == nil || *m.Metadata.DeletionGracePeriodSeconds <= 0
}

// withoutCredentials returns a request body without the credentials some
// requests carry: a TokenReview's spec.token is a bearer token of the
// cluster. A rule may name tokenreviews (to see who asks), never to keep
// the tokens. A body that does not parse is dropped.
func withoutCredentials(ref *auditv1.ObjectReference, raw []byte) []byte {
	if ref.APIGroup != "authentication.k8s.io" || ref.Resource != "tokenreviews" {
		return raw
	}
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		return nil
	}
	if spec, ok := body["spec"].(map[string]any); ok {
		if _, has := spec["token"]; has {
			spec["token"] = "(removed: a bearer token)"
		}
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil
	}
	return out
}

// keepRequestObject says whether the request body adds to the record: patches
// (the response does not show what was asked), DeleteOptions, and failed
// requests (what was attempted). A create or update body that succeeded is
// the response object again and is not stored twice.
func keepRequestObject(ev *auditv1.Event, code int32) bool {
	if ev.RequestObject == nil || len(ev.RequestObject.Raw) == 0 {
		return false
	}
	switch {
	case code >= 300:
		return true
	case ev.Verb == "patch", ev.Verb == "delete", ev.Verb == "deletecollection":
		return true
	case ev.ObjectRef != nil && ev.ObjectRef.Subresource != "":
		return true // e.g. the Scale asked for: the answer may not be the object
	}
	return false
}

func responseCode(ev *auditv1.Event) int32 {
	if ev.ResponseStatus != nil && ev.ResponseStatus.Code != 0 {
		return ev.ResponseStatus.Code
	}
	if ev.Stage == auditv1.StagePanic {
		return 500
	}
	return 200
}

// parseRV reads a resourceVersion as an integer (etcd revisions are). A
// missing one is nil; one that is not a non-negative integer is an error.
func parseRV(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, errors.New("resourceVersion is not a non-negative integer")
	}
	return &n, nil
}

func splitAPIVersion(apiVersion, fallback string) string {
	if apiVersion == "" {
		return fallback
	}
	if i := bytes.IndexByte([]byte(apiVersion), '/'); i >= 0 {
		return apiVersion[i+1:]
	}
	return apiVersion
}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// EventKey is the idempotency key of an event: a digest of its identity.
// The auditID alone is not enough: clients can set the Audit-ID header, and a
// crafted request reusing an earlier auditID must not hide itself or the
// earlier one.
func EventKey(cluster string, ev *auditv1.Event) []byte {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(cluster)
	field(string(ev.AuditID))
	field(string(ev.Stage))
	field(ev.StageTimestamp.UTC().Format(time.RFC3339Nano))
	field(ev.Verb)
	field(ev.RequestURI)
	field(ev.User.Username)
	field(ev.User.UID)
	if r := ev.ObjectRef; r != nil {
		field(r.APIGroup)
		field(r.APIVersion)
		field(r.Resource)
		field(r.Subresource)
		field(r.Namespace)
		field(r.Name)
		field(string(r.UID))
	}
	return h.Sum(nil)
}

func versionKey(eventKey []byte, uid string) []byte {
	h := sha256.New()
	h.Write(eventKey)
	h.Write([]byte(uid))
	return h.Sum(nil)
}

// UnknownUIDPrefix begins the uid of a version whose event named no uid: a
// write the audit policy logged at Metadata (no bodies): a create, a patch,
// a delete (its body is DeleteOptions; the apiserver fills objectRef.uid
// from the request body's metadata only). It is followed by a digest of the
// event, so each such version is an object of its own, with no earlier
// version to take for its prior state. A real uid never begins with it.
const UnknownUIDPrefix = "unknown-"

// addUnbodiedChange records a successful create, update, patch or delete
// whose event carries no response body (the policy logged it at Metadata or
// Request): the change is known (who, as whom, when, what), the state after
// it is not. A delete whose uid the event names is recorded by
// responseMeta already.
func (c *Converted) addUnbodiedChange(ev *auditv1.Event) {
	e := &c.Event
	switch {
	case len(c.Versions) > 0 || len(c.Skips) > 0 || e.ResponseCode >= 300 || ev.ResponseObject != nil:
		return
	case ev.ObjectRef.Subresource != "" || ev.ObjectRef.Name == "" && ev.Verb != "create":
		return
	case ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "delete":
		return
	}
	uid := string(ev.ObjectRef.UID)
	if uid == "" {
		uid = UnknownUIDPrefix + hex.EncodeToString(e.Key[:16])
	}
	v := baseVersion(e, uid)
	v.Key = versionKey(e.Key, uid)
	v.Complete = false
	v.Created = ev.Verb == "create"
	v.Deleted = ev.Verb == "delete"
	c.Versions = append(c.Versions, v)
}
