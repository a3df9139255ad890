package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/options-record/options-record/store/pgtest"
)

// TestConcurrentMigrations: ingest and two API replicas start at once, as
// the default install's workloads do, on a fresh record or one an older
// release left at each version of the record's migrations (an upgrade):
// every one of them prepares, in every round, whichever of the record's
// migrations the API's first migration meets.
func TestConcurrentMigrations(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		from := int64(round % 15)
		t.Run(fmt.Sprintf("%d-from-%d", round, from), func(t *testing.T) {
			r := pgtest.NewRoles(t)
			if from > 0 {
				migrateTo(t, r.Ingest, from)
			}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			start := make(chan struct{})
			wg.Add(3)
			go func() {
				defer wg.Done()
				<-start
				st, err := Open(ctx, Options{URL: r.Ingest})
				if err == nil {
					st.Close()
				}
				errs[0] = err
			}()
			for i := 1; i < 3; i++ {
				go func() {
					defer wg.Done()
					<-start
					reader, err := Open(ctx, Options{URL: r.Reader, Secondary: true})
					if err != nil {
						errs[i] = err
						return
					}
					defer reader.Close()
					api, err := OpenAPI(ctx, Options{URL: r.API}, reader)
					if err == nil {
						api.Close()
					}
					errs[i] = err
				}()
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("start-up %d of 3 (0: ingest, 1-2: API replicas): %v", i, err)
				}
			}
		})
	}
}
