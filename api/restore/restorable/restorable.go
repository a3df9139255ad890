// Package restorable is a recorded version seen as something to write
// back: whether its state can be restored, the clean manifest of that state
// (checked to be the very object the version is), what writing it changes
// in a live object, and the object it names. Both the restores of one
// version and the plans (package planner) ask it, so they refuse and
// compare alike.
//
// It reads nothing and writes nothing: it must never talk to the cluster or
// the database (its callers load the versions and the live objects).
package restorable

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// Check says whether a version's state can be written back.
func Check(v *store.VersionRecord) error {
	id := v.UID + "/" + fmt.Sprintf("%x", v.Key)
	if v.SecretDigested || (v.APIGroup == "" && v.Resource == "secrets" && secretHasDigests(v.Object)) {
		return fmt.Errorf("%w: version %s of Secret %s holds digests (HMAC-SHA256) of the Secret's values, not the values "+
			"(no rule recording it set recordSecretData: true), so it cannot be restored", errs.ErrUnprocessable, id, impersonate.ObjName(v.Namespace, v.Name))
	}
	if !v.HasState() {
		why := "the change did not give the object's full state"
		switch {
		case v.Deleted:
			why = "the delete was answered with a Status, not the object"
		case !v.Complete:
			why = "it is a subresource write (" + v.Subresource + ") that gave no full state"
		}
		return fmt.Errorf("%w: version %s holds no state to restore: %s", errs.ErrUnprocessable, id, why)
	}
	return nil
}

func secretHasDigests(raw []byte) bool {
	var s struct {
		Data       map[string]string `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	for _, m := range []map[string]string{s.Data, s.StringData} {
		for _, v := range m {
			if strings.HasPrefix(v, model.KeyedDigestPrefix) || strings.HasPrefix(v, model.LegacyKeyedDigestPrefix) ||
				strings.HasPrefix(v, model.PlainDigestPrefix) {
				return true
			}
		}
	}
	return false
}

// Ref is the object of the cluster a version is a state of.
func Ref(v *store.VersionRecord) impersonate.ObjectRef {
	return impersonate.ObjectRef{Group: v.APIGroup, APIVersion: v.APIVersion, Resource: v.Resource, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name}
}

// Author names who made a version in a message: its user, or
// history.BaselineAuthor (history.AdmissionAuthor: an admission review
// showed it) for a version the record took itself.
func Author(v *store.VersionRecord) string {
	if v.Username == "" && v.Origin == "admission" {
		return history.AdmissionAuthor
	}
	if v.Username == "" {
		return history.BaselineAuthor
	}
	return v.Username
}

// Manifest is manifest.CleanManifest of the state of v, checked to read
// back in kubectl as exactly the object v is (manifest.CheckSingleObject),
// with a namespaced object's namespace filled in when its state lacks it.
// Its "not an object" errors are answered as errs.ErrUnprocessable (the
// manifest cleaner is pure and knows nothing of the service's errors),
// their messages unchanged.
func Manifest(v *store.VersionRecord, obj map[string]any, check manifest.OwnerCheck) (*manifest.Manifest, error) {
	m, err := manifest.CleanManifest(obj, check)
	if err == nil {
		if md, ok := m.Object["metadata"].(map[string]any); ok && v.Namespace != "" && md["namespace"] == nil {
			md["namespace"] = v.Namespace
		}
		err = manifest.CheckSingleObject(m.Object, manifest.Identity{Group: v.APIGroup, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name})
	}
	if errors.Is(err, manifest.ErrNotObject) {
		return nil, unprocessable{err}
	}
	return m, err
}

// unprocessable is an error that is also errs.ErrUnprocessable.
type unprocessable struct{ err error }

func (e unprocessable) Error() string   { return e.err.Error() }
func (e unprocessable) Unwrap() []error { return []error{e.err, errs.ErrUnprocessable} }

// Changes is what writing the manifest changes in the live object: the
// fields the manifest leaves to the server are not compared.
func Changes(live map[string]any, m *manifest.Manifest) []history.DiffChange {
	l := manifest.DeepCopy(live).(map[string]any)
	for _, f := range m.Removed {
		removePath(l, strings.Split(f, "."))
	}
	return history.Diff(l, m.Object, history.DiffOptions{})
}

func removePath(obj map[string]any, path []string) {
	for len(path) > 1 {
		next, ok := obj[path[0]].(map[string]any)
		if !ok {
			return
		}
		obj, path = next, path[1:]
	}
	delete(obj, path[0])
}
