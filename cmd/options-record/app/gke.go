package app

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/pubsub"
)

// GKEDefaultJWKSURL is the key set of Google's OIDC tokens.
const GKEDefaultJWKSURL = pubsub.GoogleJWKSURL

// GKEOptions configure the Pub/Sub push endpoint of GKE's audit logs
// (package auditsink/pubsub), served at /gke/pubsub on the webhook's
// address by the webhook's handler, with its TLS and bounds.
type GKEOptions struct {
	// Audience is the push subscription's OIDC token audience; required.
	Audience string
	// ServiceAccount is the only push service account taken; required
	// (the audience is public).
	ServiceAccount string
	// JWKSURL is the key set tokens are checked against (default Google's).
	JWKSURL string
	// Cluster is the name GKE's events are recorded under (default
	// --cluster).
	Cluster string

	jwksClient *http.Client // tests: a client that trusts their key set's server
}

func (o *GKEOptions) validate(ingest bool) error {
	if o == nil {
		return nil
	}
	if !ingest {
		return errors.New("--gke-pubsub-audience without the role ingest (--roles): only ingest takes events")
	}
	if o.Audience == "" {
		return errors.New("the GKE push endpoint needs --gke-pubsub-audience")
	}
	// The audience is the endpoint's public URL: any Google account can
	// make a push subscription whose tokens name it, and what it pushes
	// would be recorded and keep the rules current.
	if o.ServiceAccount == "" {
		return errors.New("--gke-pubsub-audience needs --gke-pubsub-service-account: without it any Google account's push subscription for the audience (the endpoint's public URL) would be taken")
	}
	if o.JWKSURL != "" {
		if u, err := url.Parse(o.JWKSURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return errors.New("--gke-pubsub-jwks-url must be an https URL")
		}
	}
	return nil
}

// withGKE serves the push endpoint at pubsub.Path beside the webhook when
// it is configured, through the webhook's handler h (its pipeline, bounds
// and lag); every other path is next's.
func (p *ingestProcess) withGKE(ctx context.Context, h *auditsink.Handler, next http.Handler) (http.Handler, error) {
	g := p.o.GKE
	if g == nil {
		return next, nil
	}
	v, err := pubsub.NewVerifier(ctx, pubsub.VerifierOptions{Audience: g.Audience, ServiceAccount: g.ServiceAccount, JWKSURL: g.JWKSURL, Client: g.jwksClient})
	if err != nil {
		return nil, err
	}
	cluster := g.Cluster
	if cluster == "" {
		cluster = p.o.Cluster
	}
	d, err := pubsub.New(pubsub.Options{Cluster: cluster, Verifier: v, Registerer: p.reg, Logger: p.log.With("source", pubsub.Source)})
	if err != nil {
		return nil, err
	}
	p.log.Info("serving the GKE Pub/Sub push endpoint", "path", pubsub.Path, "cluster", cluster, "audience", g.Audience)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == pubsub.Path {
			h.ServeDelivery(w, r, d)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}
