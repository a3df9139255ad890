package rulesync

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// TestSharerKeepsReplicasInStep runs two replicas' registries on one
// database. The apiserver posts a rule's audit event to one of them; the
// other must apply it too (at once, not at its next resync), and so must a
// replica that starts later — also for a cluster of the fleet that no
// replica can LIST.
func TestSharerKeepsReplicasInStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// fleet-b is a cluster of the fleet whose rule namespace the operator
	// trusts (not the home cluster).
	opts := RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "home",
		TrustedNamespaces: map[string][]string{"fleet-b": {"options-record"}}}
	replica := func() *Registry {
		r := NewRegistry(nil, opts)
		s := NewSharer(r, nil)
		// No fallback poll within the test: only a notification can
		// bring a rule to the other replica.
		s.poll = 24 * time.Hour
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx, st) }()
		t.Cleanup(func() { cancel(); <-done })
		// Loaded at start: what comes later came by notification.
		select {
		case <-s.Loaded():
		case <-time.After(time.Minute):
			t.Fatal("the sharer did not load the shared rules at start")
		}
		return r
	}
	a, b := replica(), replica()
	keepsIn := func(r *Registry, ns string) bool {
		return r.RulesFor("fleet-b").Match(gen.Event(gen.Namespace(ns), gen.Name("x"))).Keep
	}
	// The minute only ends a test where it never happens.
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Replica a receives the create of a rule of cluster fleet-b.
	a.ObserveEvents("fleet-b", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u1", "10", "shop"))})
	if !keepsIn(a, "shop") {
		t.Fatal("the replica that saw the event does not apply it")
	}
	eventually("replica b applies the rule replica a saw (notified: no poll runs)", func() bool { return keepsIn(b, "shop") })

	// A replica that starts now knows it from the database.
	c := NewRegistry(nil, opts)
	objs, err := st.RuleObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyShared(objs)
	if !keepsIn(c, "shop") {
		t.Fatal("a starting replica does not know the shared rule")
	}

	// An update seen by b reaches a; an older copy seen later does not win.
	b.ObserveEvents("fleet-b", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "12", "books"))})
	eventually("replica a applies b's update", func() bool { return keepsIn(a, "books") && !keepsIn(a, "shop") })
	a.ObserveEvents("fleet-b", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "11", "shop"))})
	// A sentinel shared after the older copy: once b applies it, b has
	// read the older copy too (a sleep would pass if nothing was shared).
	a.ObserveEvents("fleet-b", []auditv1.Event{orcEvent("create", orc("options-record", "sentinel", "u9", "13", "music"))})
	eventually("replica b applies the sentinel shared after the older copy", func() bool { return keepsIn(b, "music") })
	if !keepsIn(b, "books") || keepsIn(b, "shop") {
		t.Error("an older copy shared later overrode the newer one")
	}

	// The delete, seen by a, reaches b; it is final.
	a.ObserveEvents("fleet-b", []auditv1.Event{orcEvent("delete", gen.Status("optionsrecord.io", "optionsrecordcontrollers", "r", "u1"))})
	eventually("replica b applies the delete", func() bool { return !keepsIn(b, "books") })
	if err := st.ShareRuleObjects(ctx, []store.RuleObject{{Cluster: "fleet-b", UID: "u1", ResourceVersion: 99, Object: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	objs, err = st.RuleObjects(ctx)
	var u1 []store.RuleObject
	for _, o := range objs {
		if o.UID == "u1" {
			u1 = append(u1, o)
		}
	}
	if err != nil || len(u1) != 1 || !u1[0].Deleted {
		t.Errorf("after the delete the shared row of u1 is %+v (%v), want a tombstone", u1, err)
	}
}

// blindStore shares what its replica observes but never tells it what the
// others shared: a replica whose listener is down.
type blindStore struct{ SharedRules }

func (blindStore) RuleObjects(context.Context) ([]store.RuleObject, error) { return nil, nil }
func (blindStore) ListenRuleObjects(ctx context.Context, _ func()) error {
	<-ctx.Done()
	return nil
}

// TestSharedDeletionOfARuleNotHeld: the delete of a rule reaches a replica
// that never learned the rule (its listener was down). It changes nothing
// there, but the others must hear of it.
func TestSharedDeletionOfARuleNotHeld(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts := RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	run := func(shared SharedRules) *Registry {
		r := NewRegistry(nil, opts)
		s := NewSharer(r, nil)
		wg.Go(func() { s.Run(ctx, shared) })
		return r
	}
	a, blind := run(st), run(blindStore{st})
	a.ObserveEvents("c", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u1", "10", "shop"))})
	blind.ObserveEvents("c", []auditv1.Event{orcEvent("delete", gen.Status("optionsrecord.io", "optionsrecordcontrollers", "r", "u1"))})
	deadline := time.Now().Add(10 * time.Second)
	for keeps(a, "shop") {
		if time.Now().After(deadline) {
			t.Fatal("the replica holding the rule never heard of its deletion")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSharedCopyOlderThanAListIsNotRevived: a starting replica LISTs the
// rules, then loads the shared copies. A copy older than the LIST of a rule
// the LIST did not return was deleted since (its deletion was never
// shared): it must not come back. A copy newer than the LIST applies.
func TestSharedCopyOlderThanAListIsNotRevived(t *testing.T) {
	r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	r.Replace("c", nil, 20)
	raw := func(o v1alpha1.OptionsRecordController) []byte {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r.ApplyShared([]store.RuleObject{
		{Cluster: "c", UID: "u1", ResourceVersion: 10, Object: raw(orc("options-record", "old", "u1", "10", "prod"))},
		{Cluster: "c", UID: "u2", ResourceVersion: 25, Object: raw(orc("options-record", "new", "u2", "25", "dev"))},
	})
	if keeps(r, "prod") {
		t.Error("a rule deleted before the LIST came back from its shared copy")
	}
	if !keeps(r, "dev") {
		t.Error("a rule created after the LIST was not applied from its shared copy")
	}
}
