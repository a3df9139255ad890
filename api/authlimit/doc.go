// Package authlimit is the one limiter of unauthenticated callers, used by
// every front door that authenticates: the audit webhook (package
// auditsink), the restore API (package restoreapi) and the record served
// directly to bearer tokens (package aggregated, --record-bind-address).
//
// It owns, per client address (the connection's, never a header), a budget
// of failed authentications (a token bucket), and caps on the requests
// being authenticated at once, per address and in all. A request takes one
// failure from its address's budget and one place of each cap BEFORE it is
// authenticated, and gives the failure back if it authenticates: however
// many requests an address sends at once, no more than its budget reach the
// authenticator (a TokenReview each, for the API doors). A refused request
// is answered 429 with Retry-After, before it costs anything.
//
// It never decides who a caller is, and never delays an authenticated
// request once its authentication is over.
package authlimit
