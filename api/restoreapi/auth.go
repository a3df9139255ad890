package restoreapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
)

// AuthCacheTTL is how long the delegating authenticator and authorizer
// remember the cluster's answers (the apiserver's own defaults for
// delegated authentication are 10 s).
const AuthCacheTTL = 10 * time.Second

// DelegatingAuth returns an authenticator that checks bearer tokens with
// TokenReview through tokenReviews and an authorizer that asks
// SubjectAccessReview through accessReviews, both cached for ttl (denials
// for ttl/2, so a new RoleBinding takes effect soon). Give each its own
// client (its own rate limit): the per-object checks of one caller's reads
// must not delay everyone's authentication. The sink's identity needs
// "create" on tokenreviews and subjectaccessreviews.
//
// With audiences, a token is accepted only if it was issued for one of them
// (`kubectl create token SA --audience options-record`): a token made for
// the restore API is then worth nothing against the kube-apiserver, and a
// token made for another service is refused here. Without, TokenReview
// checks the apiserver's own audiences, and callers' ordinary tokens work.
func DelegatingAuth(tokenReviews, accessReviews kubernetes.Interface, ttl time.Duration, audiences ...string) (authenticator.Request, authorizer.Authorizer, error) {
	if ttl <= 0 {
		ttl = AuthCacheTTL
	}
	backoff := retry.DefaultBackoff
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		APIAudiences:             authenticator.Audiences(audiences),
		TokenAccessReviewClient:  tokenReviews.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &backoff,
		CacheTTL:                 ttl,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("restore: TokenReview authenticator: %w", err)
	}
	if len(audiences) > 0 {
		authn = audienceBound{Request: authn, audiences: audiences}
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: accessReviews.AuthorizationV1(),
		AllowCacheTTL:             ttl,
		DenyCacheTTL:              ttl / 2,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("restore: SubjectAccessReview authorizer: %w", err)
	}
	return authn, authz, nil
}

// audienceBound asks TokenReview for the API's audiences (the webhook token
// authenticator takes them from the request's context, as the generic
// apiserver's authentication filter sets them) and refuses an answer for
// other audiences.
type audienceBound struct {
	authenticator.Request
	audiences authenticator.Audiences
}

func (a audienceBound) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := a.Request.AuthenticateRequest(r.WithContext(authenticator.WithAudiences(r.Context(), a.audiences)))
	if !ok || err != nil {
		return resp, ok, err
	}
	if len(resp.Audiences) > 0 && len(a.audiences.Intersect(resp.Audiences)) == 0 {
		return nil, false, errors.New("the token is not for this API's audiences")
	}
	return resp, ok, nil
}

// StandaloneUser is the identity of the static token of the standalone mode.
const StandaloneUser = "options-record:standalone"

// StaticToken returns the authentication of the standalone mode: callers
// presenting token are StandaloneUser, whom the returned authorizer lets
// read everything and write nothing.
func StaticToken(token string) (authenticator.Request, authorizer.Authorizer, error) {
	token = strings.TrimSpace(token)
	if len(token) < 16 {
		return nil, nil, errors.New("restore: the static API token must be at least 16 characters")
	}
	return staticToken(token), readOnly{}, nil
}

type staticToken string

func (t staticToken) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	got, ok := bearer(r)
	if !ok {
		return nil, false, nil
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(t)) != 1 {
		return nil, false, errors.New("invalid bearer token")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: StandaloneUser, Groups: []string{user.AllAuthenticated}}}, true, nil
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// readOnly allows reads only.
// readOnly is the authorizer of the standalone mode: reads only.
type readOnly struct{}

func (readOnly) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetVerb() {
	case "get", "list":
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionDeny, "standalone mode is read-only", nil
}

// authenticate is the middleware that rejects unauthenticated requests.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := bearer(r); !ok {
			authlimit.Done(r.Context(), false)
			writeError(w, r, s.log, fmt.Errorf("%w: send a bearer token (Authorization: Bearer <token>)", errs.ErrUnauthenticated))
			return
		}
		resp, ok, err := s.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			s.log.Info("restore API authentication failed", "path", r.URL.Path, "err", err)
			writeError(w, r, s.log, fmt.Errorf("%w: the bearer token was not accepted", errs.ErrUnauthenticated))
			return
		}
		r.Header.Del("Authorization")
		if h, ok := impersonationHeader(r.Header); ok {
			// Acting on it unchecked would run a restore as the token's
			// owner while its caller believes it runs as someone else;
			// ignoring it would too. The aggregated API (through the
			// kube-apiserver, which authorizes the impersonation) serves it.
			writeError(w, r, s.log, fmt.Errorf("%w: impersonation (%s) is not served by the direct API: send the request through the kube-apiserver (kubectl record without --record-server), which authorizes it", errs.ErrForbidden, h))
			return
		}
		next.ServeHTTP(w, r.WithContext(history.WithCaller(r.Context(), resp.User)))
	})
}

// impersonationHeader returns the canonical name of an Impersonate-* header
// of h, if it has one.
func impersonationHeader(h http.Header) (string, bool) {
	for k := range h {
		if len(k) >= len("impersonate-") && strings.EqualFold(k[:len("impersonate-")], "impersonate-") {
			return http.CanonicalHeaderKey(k), true
		}
	}
	return "", false
}
