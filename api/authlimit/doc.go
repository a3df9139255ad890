// Package authlimit is the one limiter of unauthenticated callers, used by
// every front door that authenticates: the audit webhook (package
// auditsink), the restore API (package restoreapi) and the record served
// directly to bearer tokens (package aggregated, --record-bind-address).
//
// It owns, per client address (the connection's, never a header; an IPv6
// address counts by its /64, the block one customer commonly gets, so the
// many addresses of one /64 share one budget), a budget
// of failed authentications (a token bucket), and caps on the requests
// being authenticated at once, per address and in all. A request takes one
// failure from its address's budget and one place of each cap BEFORE it is
// authenticated, and gives the failure back if it authenticates: however
// many requests an address sends at once, no more than its budget reach the
// authenticator (a TokenReview each, for the API doors). A refused request
// is answered 429 with Retry-After, before it costs anything.
//
// It remembers at most 10,000 addresses. To make room it forgets only the
// least recently used addresses that are as good as new (a full budget,
// nothing being authenticated); when none is, a new address is refused
// (429) until one is, rather than any spent budget forgotten.
//
// Its token bucket also paces work that is not a request (Take): the
// notification sender's messages to each destination (auditsink/notify).
//
// It never decides who a caller is, and never delays an authenticated
// request once its authentication is over.
package authlimit
