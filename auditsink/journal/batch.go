package journal

import (
	"time"

	"github.com/options-record/options-record/store/model"
)

// batchRecord is a batch as payload version 2 writes it. The journal owns
// this shape, not package store: a field renamed or added in model.Event or
// model.Version changes nothing on disk until it is added here (and to the
// conversions below), and records already on disk still read. Removing or
// renaming a tag here needs a new payload version. TestRecordCarriesEveryField
// fails when a field of the store's types is not carried.
type batchRecord struct {
	Events   []eventRecord   `json:"events"`
	Versions []versionRecord `json:"versions"`
	// Notify are the events' notification routes (model.Event.Notify),
	// kept beside the events so that eventRecord keeps the shape version 1
	// converts to; absent in records written before notifications.
	Notify []routeRecord `json:"notify,omitempty"`
	// Source is the batch's audit source (model.Batch.Source), whose
	// progress its drain records; absent in records written before it (their
	// drain records no progress).
	Source string `json:"source,omitempty"`
}

// routeRecord is one model.Route of the event at index Event.
type routeRecord struct {
	Event       int    `json:"event"`
	Rule        string `json:"rule"`
	Destination string `json:"destination"`
}

// eventRecord is a model.Event. Slices carry no omitempty: nil and empty
// differ in the store (NULL and '{}').
type eventRecord struct {
	Cluster            string    `json:"cluster"`
	Key                []byte    `json:"key"`
	StageAt            time.Time `json:"stage_at"`
	ReceivedAt         time.Time `json:"received_at,omitzero"`
	AuditID            string    `json:"audit_id"`
	Stage              string    `json:"stage,omitempty"`
	Verb               string    `json:"verb,omitempty"`
	RequestURI         string    `json:"request_uri,omitempty"`
	Username           string    `json:"username,omitempty"`
	UserUID            string    `json:"user_uid,omitempty"`
	UserGroups         []string  `json:"user_groups"`
	UserExtra          []byte    `json:"user_extra"`
	ImpersonatedUser   string    `json:"impersonated_user,omitempty"`
	ImpersonatedGroups []string  `json:"impersonated_groups"`
	SourceIPs          []string  `json:"source_ips"`
	UserAgent          string    `json:"user_agent,omitempty"`
	APIGroup           string    `json:"api_group,omitempty"`
	APIVersion         string    `json:"api_version,omitempty"`
	Resource           string    `json:"resource,omitempty"`
	Subresource        string    `json:"subresource,omitempty"`
	Namespace          string    `json:"namespace,omitempty"`
	Name               string    `json:"name,omitempty"`
	ObjectUID          string    `json:"object_uid,omitempty"`
	ResponseCode       int32     `json:"response_code,omitempty"`
	ResponseReason     string    `json:"response_reason,omitempty"`
	ResponseMessage    string    `json:"response_message,omitempty"`
	RequestObject      []byte    `json:"request_object"`
	Annotations        []byte    `json:"annotations"`
	Rules              []string  `json:"rules"`
	SecretDigested     bool      `json:"secret_digested,omitempty"`
}

// versionRecord is a model.Version.
type versionRecord struct {
	Cluster         string    `json:"cluster"`
	UID             string    `json:"uid"`
	Key             []byte    `json:"key"`
	ResourceVersion *int64    `json:"resource_version"`
	Origin          string    `json:"origin"`
	Verb            string    `json:"verb,omitempty"`
	ChangedAt       time.Time `json:"changed_at"`
	EventKey        []byte    `json:"event_key"`
	APIGroup        string    `json:"api_group,omitempty"`
	APIVersion      string    `json:"api_version,omitempty"`
	Kind            string    `json:"kind,omitempty"`
	Resource        string    `json:"resource,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	Created         bool      `json:"created,omitempty"`
	Deleted         bool      `json:"deleted,omitempty"`
	Complete        bool      `json:"complete,omitempty"`
	Object          []byte    `json:"object"`
	ObjectExact     []byte    `json:"object_exact,omitempty"`
	SecretDigested  bool      `json:"secret_digested,omitempty"`
	Rules           []string  `json:"rules"`
}

// toRecord converts b for the journal. The record shares b's slices.
func toRecord(b *model.Batch) *batchRecord {
	r := &batchRecord{Events: makeNil[eventRecord](len(b.Events)), Versions: makeNil[versionRecord](len(b.Versions)), Source: b.Source}
	for i := range b.Events {
		e := &b.Events[i]
		for _, n := range e.Notify {
			r.Notify = append(r.Notify, routeRecord{Event: i, Rule: n.Rule, Destination: n.Destination})
		}
		r.Events[i] = eventRecord{
			Cluster:            e.Cluster,
			Key:                e.Key,
			StageAt:            e.StageAt,
			ReceivedAt:         e.ReceivedAt,
			AuditID:            e.AuditID,
			Stage:              e.Stage,
			Verb:               e.Verb,
			RequestURI:         e.RequestURI,
			Username:           e.Username,
			UserUID:            e.UserUID,
			UserGroups:         e.UserGroups,
			UserExtra:          e.UserExtra,
			ImpersonatedUser:   e.ImpersonatedUser,
			ImpersonatedGroups: e.ImpersonatedGroups,
			SourceIPs:          e.SourceIPs,
			UserAgent:          e.UserAgent,
			APIGroup:           e.APIGroup,
			APIVersion:         e.APIVersion,
			Resource:           e.Resource,
			Subresource:        e.Subresource,
			Namespace:          e.Namespace,
			Name:               e.Name,
			ObjectUID:          e.ObjectUID,
			ResponseCode:       e.ResponseCode,
			ResponseReason:     e.ResponseReason,
			ResponseMessage:    e.ResponseMessage,
			RequestObject:      e.RequestObject,
			Annotations:        e.Annotations,
			Rules:              e.Rules,
			SecretDigested:     e.SecretDigested,
		}
	}
	for i := range b.Versions {
		v := &b.Versions[i]
		r.Versions[i] = versionRecord{
			Cluster:         v.Cluster,
			UID:             v.UID,
			Key:             v.Key,
			ResourceVersion: v.ResourceVersion,
			Origin:          string(v.Origin),
			Verb:            v.Verb,
			ChangedAt:       v.ChangedAt,
			EventKey:        v.EventKey,
			APIGroup:        v.APIGroup,
			APIVersion:      v.APIVersion,
			Kind:            v.Kind,
			Resource:        v.Resource,
			Subresource:     v.Subresource,
			Namespace:       v.Namespace,
			Name:            v.Name,
			Created:         v.Created,
			Deleted:         v.Deleted,
			Complete:        v.Complete,
			Object:          v.Object,
			ObjectExact:     v.ObjectExact,
			SecretDigested:  v.SecretDigested,
			Rules:           v.Rules,
		}
	}
	return r
}

// batch converts a decoded record back into the store's batch.
func (r *batchRecord) batch() *model.Batch {
	b := &model.Batch{Events: makeNil[model.Event](len(r.Events)), Versions: makeNil[model.Version](len(r.Versions)), Source: r.Source}
	for i := range r.Events {
		e := &r.Events[i]
		b.Events[i] = model.Event{
			Cluster:            e.Cluster,
			Key:                e.Key,
			StageAt:            e.StageAt,
			ReceivedAt:         e.ReceivedAt,
			AuditID:            e.AuditID,
			Stage:              e.Stage,
			Verb:               e.Verb,
			RequestURI:         e.RequestURI,
			Username:           e.Username,
			UserUID:            e.UserUID,
			UserGroups:         e.UserGroups,
			UserExtra:          e.UserExtra,
			ImpersonatedUser:   e.ImpersonatedUser,
			ImpersonatedGroups: e.ImpersonatedGroups,
			SourceIPs:          e.SourceIPs,
			UserAgent:          e.UserAgent,
			APIGroup:           e.APIGroup,
			APIVersion:         e.APIVersion,
			Resource:           e.Resource,
			Subresource:        e.Subresource,
			Namespace:          e.Namespace,
			Name:               e.Name,
			ObjectUID:          e.ObjectUID,
			ResponseCode:       e.ResponseCode,
			ResponseReason:     e.ResponseReason,
			ResponseMessage:    e.ResponseMessage,
			RequestObject:      e.RequestObject,
			Annotations:        e.Annotations,
			Rules:              e.Rules,
			SecretDigested:     e.SecretDigested,
		}
	}
	for i := range r.Versions {
		v := &r.Versions[i]
		b.Versions[i] = model.Version{
			Cluster:         v.Cluster,
			UID:             v.UID,
			Key:             v.Key,
			ResourceVersion: v.ResourceVersion,
			Origin:          model.Origin(v.Origin),
			Verb:            v.Verb,
			ChangedAt:       v.ChangedAt,
			EventKey:        v.EventKey,
			APIGroup:        v.APIGroup,
			APIVersion:      v.APIVersion,
			Kind:            v.Kind,
			Resource:        v.Resource,
			Subresource:     v.Subresource,
			Namespace:       v.Namespace,
			Name:            v.Name,
			Created:         v.Created,
			Deleted:         v.Deleted,
			Complete:        v.Complete,
			Object:          v.Object,
			ObjectExact:     v.ObjectExact,
			SecretDigested:  v.SecretDigested,
			Rules:           v.Rules,
		}
	}
	for _, n := range r.Notify {
		if n.Event >= 0 && n.Event < len(b.Events) {
			e := &b.Events[n.Event]
			e.Notify = append(e.Notify, model.Route{Rule: n.Rule, Destination: n.Destination})
		}
	}
	return b
}

// makeNil makes a slice of n elements, nil for none (as a batch without
// versions has).
func makeNil[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, n)
}
