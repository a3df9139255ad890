package reads_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/reads"
)

// A user's changes in a namespace, asked right after a burst of them, before
// autovacuum has analyzed the day's partition: planned from statistics the
// burst outgrew, the events join rescanned the user's events for every
// version (13 s for 5,000 events, each undo plan a statement timeout). The
// event of each version is found by its key whatever the statistics. The
// test counts rows, not time: the rows the join threw away.
func TestUserChangesAfterABurstFindEventsByKey(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const n = 2000
	start := time.Now().Add(-time.Hour).UTC()
	if err := s.EnsurePartitionsAround(ctx, start); err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	for j := 0; j < n; j++ {
		at := start.Add(time.Duration(j) * 100 * time.Millisecond)
		name, uid := fmt.Sprintf("cm-%05d", j), fmt.Sprintf("burst-%05d", j)
		ek := sha256.Sum256([]byte("event-" + uid))
		vk := sha256.Sum256([]byte("version-" + uid))
		rv := int64(1_000_000 + j)
		b.Events = append(b.Events, model.Event{Cluster: "default", Key: ek[:], StageAt: at, AuditID: uid, Stage: "ResponseComplete",
			Verb: "create", RequestURI: "/api/v1/namespaces/burst/configmaps", Username: "mallory", APIVersion: "v1",
			Resource: "configmaps", Namespace: "burst", Name: name, ObjectUID: uid, ResponseCode: 201})
		b.Versions = append(b.Versions, model.Version{Cluster: "default", UID: uid, Key: vk[:], ResourceVersion: &rv, Origin: model.OriginChange,
			Verb: "create", ChangedAt: at, EventKey: ek[:], APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
			Namespace: "burst", Name: name, Created: true, Complete: true,
			Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`)})
	}
	if _, err := s.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	since := start.Add(-time.Minute)
	for _, q := range []reads.ChangeQuery{
		{Cluster: "default", User: "mallory", ChangesOnly: true, Limit: 500, Namespaces: []string{"burst"}, Since: since}, // an undo plan's
		{Cluster: "default", User: "mallory", Limit: 500, Namespace: str("burst"), Since: since},
		{Cluster: "default", User: "mallory", ChangesOnly: true, Limit: 500, Since: since, Ascending: true, // cluster-wide
			Resources: []reads.GroupResource{{Group: "", Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}},
		{Cluster: "default", User: "mallory", Limit: 500, Since: since},
	} {
		text, args := reads.ChangesSQL(q)
		rows, err := s.Pool().Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF) "+text, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, l)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		removed := 0
		for _, m := range joinFilterRemoved.FindAllStringSubmatch(strings.Join(plan, "\n"), -1) {
			k, _ := strconv.Atoi(m[1])
			removed += k
		}
		if removed > n {
			t.Errorf("the join threw away %d rows for %d events (each version rescanned the user's events):\n%s", removed, n, strings.Join(plan, "\n"))
		}
	}
}

var joinFilterRemoved = regexp.MustCompile(`Rows Removed by Join Filter: (\d+)`)
