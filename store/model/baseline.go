package model

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
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
}

// BaselineVersion turns a listed object into a baseline version: a known
// state that gives the first recorded change after it a prior state. Secret
// values are digested unless RecordSecretData.
func BaselineVersion(o BaselineObject) (Version, error) {
	var meta objectMeta
	if err := json.Unmarshal(o.Raw, &meta); err != nil {
		return Version{}, fmt.Errorf("baseline object: %w", err)
	}
	if meta.Metadata.UID == "" {
		return Version{}, errors.New("baseline object has no uid")
	}
	rv, err := parseRV(meta.Metadata.ResourceVersion)
	if err != nil || rv == nil {
		return Version{}, fmt.Errorf("baseline object %s/%s: bad resourceVersion %q", meta.Metadata.Namespace, meta.Metadata.Name, meta.Metadata.ResourceVersion)
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
	fmt.Fprintf(h, "baseline\x00%s\x00%s\x00%d", o.Cluster, meta.Metadata.UID, *rv)
	v := Version{
		Cluster:         o.Cluster,
		UID:             meta.Metadata.UID,
		Key:             h.Sum(nil),
		ResourceVersion: rv,
		Origin:          OriginBaseline,
		Verb:            "baseline",
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
	// As for a change: a state PostgreSQL cannot read as sent (a NUL in a
	// ConfigMap's data) is stored readable, and exactly beside.
	safeState(&v)
	return v, nil
}
