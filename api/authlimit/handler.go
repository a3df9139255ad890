package authlimit

import (
	"context"
	"errors"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// admittedKey carries, in a request's context, the done function of its
// admission by Handler.
type admittedKey struct{}

// Handler admits every request (Admit) before next, which authenticates it
// with l's Authenticator (or calls Done); a refused request is answered by
// refuse and never reaches next. A request that next answers without its
// authentication decided is decided by its status: 401 is a failure.
func (l *Limiter) Handler(next http.Handler, refuse func(http.ResponseWriter, *http.Request, *Refusal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done, err := l.Admit(r)
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				ref = &Refusal{Reason: err.Error()}
			}
			refuse(w, r, ref)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { done(sw.status != http.StatusUnauthorized) }()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), admittedKey{}, done)))
	})
}

// Done decides the authentication of the request Handler admitted, whose
// context is ctx: authenticated gives its failure back. It does nothing
// for a request Handler did not admit, or decided already.
func Done(ctx context.Context, authenticated bool) {
	if done, ok := ctx.Value(admittedKey{}).(func(bool)); ok {
		done(authenticated)
	}
}

// Authenticator wraps a so that its answer decides the request's
// admission: a request Handler admitted is decided (and its places
// released) as soon as a has answered; any other request is admitted
// here first, a refusal being an authentication error.
func (l *Limiter) Authenticator(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		done, admitted := r.Context().Value(admittedKey{}).(func(bool))
		if !admitted {
			var err error
			if done, err = l.Admit(r); err != nil {
				return nil, false, err
			}
		}
		resp, ok, err := a.AuthenticateRequest(r)
		done(ok && err == nil)
		return resp, ok, err
	})
}

// statusWriter remembers the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
