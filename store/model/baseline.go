package model

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// BaselineObject is one object as a LIST returned it.
type BaselineObject struct {
	Cluster    string
	APIGroup   string
	APIVersion string
	Resource   string
	Raw        []byte // the object's JSON
	Rules      []string
	// RecordSecretData keeps Secret values in clear (a rule asks for it).
	RecordSecretData bool
	// Digester digests Secret values; a Secret without one is an error
	// (ErrNoDigester).
	Digester   *SecretDigester
	ObservedAt time.Time
	// Origin is OriginBaseline (the zero value) for an object a LIST
	// returned, OriginAdmission for one an admission review showed
	// (oldObject): a state at its own resourceVersion either way.
	Origin Origin
}

// BaselineVersion turns a listed (or reviewed) object into a baseline (or
// admission) version: a known state that gives the first recorded change
// after it a prior state. Secret values are digested unless
// RecordSecretData.
func BaselineVersion(o BaselineObject) (Version, error) {
	origin := o.Origin
	if origin == "" {
		origin = OriginBaseline
	}
	var meta objectMeta
	if err := json.Unmarshal(o.Raw, &meta); err != nil {
		return Version{}, fmt.Errorf("%s object: %w", origin, err)
	}
	if meta.Metadata.UID == "" {
		return Version{}, fmt.Errorf("%s object has no uid", origin)
	}
	rv, err := parseRV(meta.Metadata.ResourceVersion)
	if err != nil || rv == nil {
		return Version{}, fmt.Errorf("%s object %s/%s: bad resourceVersion %q", origin, meta.Metadata.Namespace, meta.Metadata.Name, meta.Metadata.ResourceVersion)
	}
	raw := o.Raw
	digested := false
	if !o.RecordSecretData && (o.APIGroup == "" && o.Resource == "secrets" || meta.Kind == "Secret" && meta.APIVersion == "v1") {
		if o.Digester == nil {
			return Version{}, ErrNoDigester
		}
		raw, digested = o.Digester.at(SecretPlace{o.Cluster, meta.Metadata.Namespace, meta.Metadata.Name}).object(raw), true
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", origin, o.Cluster, meta.Metadata.UID, *rv)
	v := Version{
		Cluster:         o.Cluster,
		UID:             meta.Metadata.UID,
		Key:             h.Sum(nil),
		ResourceVersion: rv,
		Origin:          origin,
		Verb:            string(origin),
		ChangedAt:       o.ObservedAt,
		APIGroup:        o.APIGroup,
		APIVersion:      o.APIVersion,
		Kind:            meta.Kind,
		Resource:        o.Resource,
		Namespace:       meta.Metadata.Namespace,
		Name:            meta.Metadata.Name,
		// A LIST through the dynamic client types its items; an object
		// without a type or name is kept as data, not as a state to restore.
		Complete:       meta.APIVersion != "" && meta.Kind != "" && meta.Metadata.Name != "",
		Object:         compactJSON(withoutManagedFields(raw)),
		SecretDigested: digested,
		Rules:          o.Rules,
	}
	// As for a change: names PostgreSQL cannot store (a NUL in a forged
	// review's metadata) are stored with U+FFFD, a state it cannot read as
	// sent (a NUL in a ConfigMap's data) readable, and exactly beside.
	safeVersion(&v)
	return v, nil
}
