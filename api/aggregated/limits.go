package aggregated

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/options-record/options-record/api/authlimit"
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
		ctx, cancel := answerBeforeTheDeadline(ctx)
		defer cancel()
		release, ok := callers.Acquire(u)
		if !ok {
			err := apierrors.NewTooManyRequests(fmt.Sprintf("%d of your requests are being served; wait for them", callers.Limit()), 1)
			responsewriters.ErrorNegotiated(err, Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, r)
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// answerBeforeTheDeadline gives a request's work a deadline shortly
// before the request's own (--request-timeout, set by the generic
// server), so that work that runs out of time is answered by the API (504
// saying what to narrow) rather than by the generic server's timeout
// filter, which answers at the very same instant with a message of its
// own and raced it (seen in the end-to-end bounds test).
func answerBeforeTheDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	margin := min(time.Until(deadline)/10, time.Second)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// DirectMaxStreamsPerConnection is the HTTP/2 streams one connection to the
// direct door may have open at once (the aggregated door allows the
// kube-apiserver's proxy 1,000).
const DirectMaxStreamsPerConnection = 32

// refuseUnauthenticated answers a request the limit of unauthenticated
// requests refused (package authlimit): 429, a Status, Retry-After.
func refuseUnauthenticated(w http.ResponseWriter, r *http.Request, ref *authlimit.Refusal) {
	secs, _ := strconv.Atoi(ref.RetryAfterSeconds())
	responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests(ref.Reason, secs), Codecs, schema.GroupVersion{}, w, r)
}
