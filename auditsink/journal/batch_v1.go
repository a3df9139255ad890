package journal

import (
	"time"

	"github.com/options-record/options-record/store/model"
)

// batchV1 is a batch as payload version 1 wrote it: model.Batch as it was
// then, encoded by Go field names. It is frozen here so that records
// journaled by releases before version 2 still drain after store's types
// change. Never change it; only read it.
type batchV1 struct {
	Events   []eventV1   `json:"Events"`
	Versions []versionV1 `json:"Versions"`
}

type eventV1 struct {
	Cluster            string    `json:"Cluster"`
	Key                []byte    `json:"Key"`
	StageAt            time.Time `json:"StageAt"`
	ReceivedAt         time.Time `json:"ReceivedAt"`
	AuditID            string    `json:"AuditID"`
	Stage              string    `json:"Stage"`
	Verb               string    `json:"Verb"`
	RequestURI         string    `json:"RequestURI"`
	Username           string    `json:"Username"`
	UserUID            string    `json:"UserUID"`
	UserGroups         []string  `json:"UserGroups"`
	UserExtra          []byte    `json:"UserExtra"`
	ImpersonatedUser   string    `json:"ImpersonatedUser"`
	ImpersonatedGroups []string  `json:"ImpersonatedGroups"`
	SourceIPs          []string  `json:"SourceIPs"`
	UserAgent          string    `json:"UserAgent"`
	APIGroup           string    `json:"APIGroup"`
	APIVersion         string    `json:"APIVersion"`
	Resource           string    `json:"Resource"`
	Subresource        string    `json:"Subresource"`
	Namespace          string    `json:"Namespace"`
	Name               string    `json:"Name"`
	ObjectUID          string    `json:"ObjectUID"`
	ResponseCode       int32     `json:"ResponseCode"`
	ResponseReason     string    `json:"ResponseReason"`
	ResponseMessage    string    `json:"ResponseMessage"`
	RequestObject      []byte    `json:"RequestObject"`
	Annotations        []byte    `json:"Annotations"`
	Rules              []string  `json:"Rules"`
	SecretDigested     bool      `json:"SecretDigested"`
}

type versionV1 struct {
	Cluster         string    `json:"Cluster"`
	UID             string    `json:"UID"`
	Key             []byte    `json:"Key"`
	ResourceVersion *int64    `json:"ResourceVersion"`
	Origin          string    `json:"Origin"`
	Verb            string    `json:"Verb"`
	ChangedAt       time.Time `json:"ChangedAt"`
	EventKey        []byte    `json:"EventKey"`
	APIGroup        string    `json:"APIGroup"`
	APIVersion      string    `json:"APIVersion"`
	Kind            string    `json:"Kind"`
	Resource        string    `json:"Resource"`
	Subresource     string    `json:"Subresource"`
	Namespace       string    `json:"Namespace"`
	Name            string    `json:"Name"`
	Created         bool      `json:"Created"`
	Deleted         bool      `json:"Deleted"`
	Complete        bool      `json:"Complete"`
	Object          []byte    `json:"Object"`
	ObjectExact     []byte    `json:"ObjectExact,omitempty"` // never written by version 1: here so that the record converts
	SecretDigested  bool      `json:"SecretDigested"`
	Rules           []string  `json:"Rules"`
}

// batch converts a version 1 batch into the store's batch. The fields are
// the same as version 2's, so it goes through the version 2 record.
func (r *batchV1) batch() *model.Batch {
	v2 := &batchRecord{Events: makeNil[eventRecord](len(r.Events)), Versions: makeNil[versionRecord](len(r.Versions))}
	for i := range r.Events {
		v2.Events[i] = eventRecord(r.Events[i])
	}
	for i := range r.Versions {
		v2.Versions[i] = versionRecord(r.Versions[i])
	}
	return v2.batch()
}
