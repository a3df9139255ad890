package history

import (
	"context"
	"fmt"
	"time"
)

// NewestEvents is, by source (webhook, firehose, pubsub, eventhubs), the
// stageTimestamp of the newest event stored from it for cluster: a change
// younger than it may not have arrived yet. It says nothing of any object
// nor of who acted, only how late each feed of the cluster is; the front
// doors give it to callers they have authorized to list the record. None
// without a ProgressReader, or for a cluster the service does not serve.
func (s *Service) NewestEvents(ctx context.Context, cluster string) (map[string]time.Time, error) {
	if s.progress == nil || s.cluster != "" && cluster != s.cluster {
		return nil, nil // not known, or a cluster not served
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
