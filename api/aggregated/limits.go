package aggregated

import (
	"fmt"
	"net/http"

	"github.com/options-record/options-record/api/history"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// perCaller caps the resource requests of one caller served at once (the
// direct API's --api-max-in-flight-per-user): past it the caller gets 429
// with Retry-After at once, so a few callers cannot hold every connection
// of the API's pool. The generic server's max-in-flight filter caps them
// all. Discovery, OpenAPI and health requests are not counted: the
// aggregator's availability checks must never be refused.
func perCaller(next http.Handler, callers *history.CallerLimiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		info, ok := genericapirequest.RequestInfoFrom(ctx)
		u, known := genericapirequest.UserFrom(ctx)
		if !ok || !info.IsResourceRequest || !known {
			next.ServeHTTP(w, r)
			return
		}
		release, ok := callers.Acquire(u)
		if !ok {
			err := apierrors.NewTooManyRequests(fmt.Sprintf("%d of your requests are being served; wait for them", callers.Limit()), 1)
			responsewriters.ErrorNegotiated(err, Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, r)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
