package aggregated

import (
	"log/slog"
	"net/http"
	"time"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// readResources are the record's read resources, whose lists carry
// recordv1alpha1.NewestEventsHeader.
var readResources = map[string]bool{
	"deletions": true, "clusterdeletions": true,
	"changes": true, "clusterchanges": true,
	"attempts": true, "clusterattempts": true,
}

// withNewestEvents adds recordv1alpha1.NewestEventsHeader to the lists of
// the read resources: how late each source of the cluster is, for a
// caller who would otherwise take a change not yet delivered for one not
// made. It runs inside the chain, so only for a caller authenticated and
// authorized to list the resource, and adds it only for one who may list
// it at the cluster scope (a namespace's reader learns nothing of the
// cluster's feeds). A failure to read it is logged and the
// list answered without it.
func withNewestEvents(h http.Handler, hist *history.Service, cluster string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(r.Context())
		if ok && info.IsResourceRequest && info.Verb == "list" && info.APIGroup == recordv1alpha1.GroupName &&
			info.Subresource == "" && readResources[info.Resource] {
			// The chain authorized this list, perhaps in one namespace: the
			// header, of the whole cluster, needs the list at the cluster
			// scope (NewestEvents asks).
			newest, err := hist.NewestEvents(r.Context(), cluster, recordv1alpha1.GroupName, info.Resource)
			if err != nil {
				log.Warn("the sources' progress could not be read: a list answered without it", "err", err)
			}
			if v := recordv1alpha1.FormatNewestEvents(cluster, time.Now(), newest); v != "" {
				w.Header().Set(recordv1alpha1.NewestEventsHeader, v)
			}
		}
		h.ServeHTTP(w, r)
	})
}
