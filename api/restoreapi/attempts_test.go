package restoreapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
)

// TestFailedMutationByShortName: GET /failed-mutations/{attempt} answers
// the one attempt a short name (or its long name) names, with its short
// name and request body; a short name that names two the caller may read
// is a 400 listing both, never the Secret's attempt the caller may not
// read, which alone is a 404 as an absent one is.
func TestFailedMutationByShortName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	e := func(resource, name string, prefix ...byte) store.EventRecord {
		return store.EventRecord{Cluster: "default", Key: append(prefix, bytes.Repeat([]byte{0x11}, 32-len(prefix))...), At: at,
			Verb: "delete", APIVersion: "v1", Resource: resource, Namespace: "prod", Name: name, Username: "mallory",
			ResponseCode: 403, ResponseReason: "Forbidden", RequestObject: []byte(`{"kind":"DeleteOptions"}`)}
	}
	s := newServer(t, recordOptions{Reader: &fakeReader{events: []store.EventRecord{
		e("configmaps", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x10),
		e("configmaps", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x20),
		e("secrets", "app-config", 0x3f, 0x9a, 0x2c, 0x77),
	}}, Authorizer: denySecrets{}}, Options{Authenticator: oneUser{}})
	base := "/api/v1/clusters/default/failed-mutations/"
	code, _, body := do(t, s, http.MethodGet, base+"app-config-3f9a2c1b1", "")
	var got struct {
		ShortName, LongName, Resource string
		RequestObject                 json.RawMessage
	}
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("by a unique prefix: %d %s", code, body)
	}
	if got.ShortName != "app-config-3f9a2c1b" || !strings.HasSuffix(got.LongName, ".3f9a2c1b10"+strings.Repeat("11", 27)) || len(got.RequestObject) == 0 {
		t.Errorf("by a unique prefix: %s", body)
	}
	if code, _, _ := do(t, s, http.MethodGet, base+got.LongName, ""); code != http.StatusOK {
		t.Errorf("by the long name: %d", code)
	}
	code, e400, _ := do(t, s, http.MethodGet, base+"app-config-3f9a", "")
	if code != http.StatusBadRequest || strings.Count(e400.Message, "\n  ") != 2 || strings.Contains(e400.Message, "secrets") || strings.Contains(e400.Message, "3f9a2c77") {
		t.Errorf("an ambiguous short name: %d %q; want a 400 listing the two configmaps' attempts only", code, e400.Message)
	}
	codeHidden, eHidden, _ := do(t, s, http.MethodGet, base+"app-config-3f9a2c77", "")
	codeNone, eNone, _ := do(t, s, http.MethodGet, base+"app-config-3f9a2c78", "")
	if codeHidden != http.StatusNotFound || codeNone != codeHidden || strings.ReplaceAll(eHidden.Message, "77", "78") != eNone.Message {
		t.Errorf("hidden: %d %q; absent: %d %q; want the same 404", codeHidden, eHidden.Message, codeNone, eNone.Message)
	}
}
