package auditsink

import (
	"errors"
	"net/http"
	"time"

	"github.com/options-record/options-record/api/authlimit"
)

// failLimiter limits failed authentications per client address with the
// limiter every front door shares (package authlimit). The webhook's
// authentication is a lookup in memory, so a failure is counted once it is
// known: an authenticated caller is never delayed or refused by it.
type failLimiter struct{ lim *authlimit.Limiter }

func newFailLimiter(perSecond float64, burst int) *failLimiter {
	return &failLimiter{lim: authlimit.New(authlimit.Options{FailureRate: perSecond, FailureBurst: burst})}
}

// allow counts one failure of r's address and tells whether it is within
// the limit, and if not, how long until the next one is.
func (f *failLimiter) allow(r *http.Request, _ time.Time) (bool, time.Duration) {
	done, err := f.lim.Admit(r)
	if err != nil {
		ref := &authlimit.Refusal{RetryAfter: time.Second}
		errors.As(err, &ref)
		return false, ref.RetryAfter
	}
	done(false)
	return true, 0
}
