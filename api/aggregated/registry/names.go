package registry

import (
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/shortname"
)

// ObjectName is the name of a record object: <uid>.<version key>.
func ObjectName(uid, key string) string { return uid + "." + key }

// ParseRecordName reverses ObjectName, by the one parser of long names
// (shortname.ParseLong).
func ParseRecordName(cluster, name string) (history.VersionID, error) {
	uid, key, ok := shortname.ParseLong(name)
	if !ok {
		return history.VersionID{}, errors.New("not <uid>.<version key>")
	}
	return history.VersionID{Cluster: cluster, UID: uid, Key: key}, nil
}

// Raw is v as JSON in an object's field; nil when v is nil or not JSON.
func Raw(v any) *runtime.RawExtension {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: b}
}

// ListLimit is a list's page size: the request's limit, at most (and by
// default) history.MaxLimit.
func ListLimit(opts *metainternalversion.ListOptions) int {
	limit := int(opts.Limit)
	if limit <= 0 || limit > history.MaxLimit {
		limit = history.MaxLimit
	}
	return limit
}

// SetContinue sets the continue token of a list.
func SetContinue(list runtime.Object, next string) {
	if l, err := meta.ListAccessor(list); err == nil {
		l.SetContinue(next)
	}
}
