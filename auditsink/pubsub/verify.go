package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// GoogleJWKSURL is where Google publishes the keys that sign its OIDC
// tokens, the push subscriptions' among them.
const GoogleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"

// googleIssuers are the issuers of Google-signed ID tokens: Google
// documents both spellings (Pub/Sub, "Authenticate push subscriptions").
var googleIssuers = []string{"https://accounts.google.com", "accounts.google.com"}

// VerifierOptions configure the check of a push request's token.
type VerifierOptions struct {
	// Audience is the push subscription's --push-auth-token-audience (or
	// its push endpoint URL, Pub/Sub's default); required.
	Audience string
	// ServiceAccount, when set, is the only email the token may carry:
	// the subscription's --push-auth-service-account. Without it, any
	// Google service account whose token names Audience is taken.
	ServiceAccount string
	// JWKSURL is the key set the signature is checked against (default
	// GoogleJWKSURL); tests serve their own.
	JWKSURL string
	// Client fetches the key set (default http.DefaultClient).
	Client *http.Client
	// Now is the clock of the expiry check (default time.Now).
	Now func() time.Time
}

// Verifier checks the Google-signed OIDC token of a push request with
// github.com/coreos/go-oidc: signature (RS256, against the key set,
// refetched when a token names a key it does not hold), issuer, audience,
// expiry, and the service account.
type Verifier struct {
	v       *oidc.IDTokenVerifier
	account string
}

// NewVerifier builds a Verifier. ctx bounds the key set's fetches.
func NewVerifier(ctx context.Context, o VerifierOptions) (*Verifier, error) {
	if o.Audience == "" {
		return nil, errors.New("pubsub: an audience is required")
	}
	if o.JWKSURL == "" {
		o.JWKSURL = GoogleJWKSURL
	}
	if o.Client != nil {
		ctx = oidc.ClientContext(ctx, o.Client)
	}
	keys := oidc.NewRemoteKeySet(ctx, o.JWKSURL)
	// The issuer is checked below: Google uses two spellings, go-oidc
	// compares with one.
	v := oidc.NewVerifier("", keys, &oidc.Config{ClientID: o.Audience, SupportedSigningAlgs: []string{oidc.RS256},
		SkipIssuerCheck: true, Now: o.Now})
	return &Verifier{v: v, account: o.ServiceAccount}, nil
}

// errUnauthenticated is a push request without a valid token.
var errUnauthenticated = errors.New("unauthenticated")

// Verify checks the request's bearer token and returns the email it was
// issued to.
func (v *Verifier) Verify(ctx context.Context, r *http.Request) (string, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || raw == "" {
		return "", fmt.Errorf("%w: no bearer token", errUnauthenticated)
	}
	tok, err := v.v.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	if !slices.Contains(googleIssuers, tok.Issuer) {
		return "", fmt.Errorf("%w: issuer %q is not Google's", errUnauthenticated, tok.Issuer)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil {
		return "", fmt.Errorf("%w: claims: %w", errUnauthenticated, err)
	}
	if v.account != "" && (claims.Email != v.account || !claims.EmailVerified) {
		return "", fmt.Errorf("%w: token of %q, not of the push service account", errUnauthenticated, claims.Email)
	}
	return claims.Email, nil
}
