package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/options-record/options-record/api/errs"
)

// NewestEvents is, by source (webhook, firehose, pubsub, eventhubs), the
// stageTimestamp of the newest event stored from it for cluster: a change
// younger than it may not have arrived yet. It says nothing of any object
// nor of who acted, but it is the cluster's, not a namespace's: only a
// caller who may list resource of group (a read resource of the record
// API: deletions, changes, attempts) at the cluster scope learns it
// (SubjectAccessReview, like the rows'); for any other, and without a
// ProgressReader, or for a cluster the service does not serve, it is none.
func (s *Service) NewestEvents(ctx context.Context, cluster, group, resource string) (map[string]time.Time, error) {
	if s.progress == nil || s.cluster != "" && cluster != s.cluster {
		return nil, nil // not known, or a cluster not served
	}
	if err := s.authorize(ctx, "list", group, resource, "", ""); err != nil {
		if errors.Is(err, errs.ErrForbidden) || errors.Is(err, errs.ErrUnauthenticated) {
			return nil, nil // a namespace's reader: not the cluster's timing
		}
		return nil, fmt.Errorf("history: newest events: %w", err)
	}
	ps, err := s.progress.Progress(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("history: newest events: %w", err)
	}
	out := make(map[string]time.Time, len(ps))
	for _, p := range ps {
		out[p.Source] = p.NewestEventAt
	}
	return out, nil
}
