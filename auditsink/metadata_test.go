package auditsink_test

import (
	"testing"

	. "github.com/options-record/options-record/test/gen"
)

// TestMetadataLevelMutationsAreChanges: a policy that logs a ConfigMap at
// Metadata (EKS's, GKE's) sends no bodies and, for a delete, often no uid.
// Every such write is still a change: who, as whom, from where, what; the
// deletion is listed with its state unknown, or with the state an earlier
// version of the same object gave.
func TestMetadataLevelMutationsAreChanges(t *testing.T) {
	e := newEnv(t)
	// No bodies, no uid: the policy's Metadata level.
	e.send(Event(Verb("create"), User("alice"), Namespace("prod"), Name("meta-only")),
		Event(Verb("patch"), User("alice"), Namespace("prod"), Name("meta-only")),
		Event(Verb("delete"), User("admin"), Impersonating("bob"), UserAgent("kubectl/v1.34"),
			Namespace("prod"), Name("meta-only")))
	if n := e.count(`SELECT count(*) FROM object_history WHERE namespace = 'prod' AND name = 'meta-only'`); n != 3 {
		t.Errorf("changes of a ConfigMap logged at Metadata = %d, want 3 (create, patch, delete)", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod' AND name = 'meta-only'
		AND username = 'admin' AND impersonated_user = 'bob' AND user_agent = 'kubectl/v1.34'
		AND NOT prior_known AND prior_object IS NULL AND state_unknown`); n != 1 {
		t.Errorf("deletions of a ConfigMap logged at Metadata, by admin as bob, state unknown = %d, want 1", n)
	}
	// A delete at Metadata that names the uid (a precondition) after a
	// change logged with its body: that body is the state before.
	const uid = "11111111-0000-0000-0000-000000000034"
	e.send(Event(Verb("create"), User("alice"), Namespace("prod"), Name("known"),
		Response(ConfigMap("prod", "known", uid, 340, map[string]string{"k": "v1"}))))
	del := Event(Verb("delete"), User("bob"), Namespace("prod"), Name("known"))
	del.ObjectRef.UID = uid
	e.send(del, del) // a redelivery adds nothing
	if n := e.count(`SELECT count(*) FROM deletions WHERE name = 'known' AND username = 'bob'
		AND prior_known AND NOT state_unknown AND prior_object->'data'->>'k' = 'v1'`); n != 1 {
		t.Errorf("deletions of known with the state before = %d, want 1", n)
	}
}
