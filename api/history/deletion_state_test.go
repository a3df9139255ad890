package history

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/options-record/options-record/store"
)

// TestDeletionSaysWhenItsStateIsUnknown: a deletion the record holds no
// state for (a delete logged at Metadata) says so in its JSON, and offers
// nothing to restore; one with a state does not.
func TestDeletionSaysWhenItsStateIsUnknown(t *testing.T) {
	unknown := deletionOf(&store.Deletion{VersionRecord: store.VersionRecord{Cluster: "c", UID: "u", Verb: "delete", Deleted: true}})
	known := deletionOf(&store.Deletion{VersionRecord: store.VersionRecord{Cluster: "c", UID: "u", Verb: "delete", Deleted: true}, StateKey: []byte{1}})
	for _, c := range []struct {
		d    Deletion
		want bool
	}{{unknown, true}, {known, false}} {
		js, err := json.Marshal(c.d)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(js), `"stateUnknown":true`); got != c.want || (c.d.RestoreFrom == nil) != c.want {
			t.Errorf("deletion %s: stateUnknown %v, restoreFrom %v; want stateUnknown %v", js, got, c.d.RestoreFrom, c.want)
		}
	}
}
