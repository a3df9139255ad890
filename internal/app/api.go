package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/options-record/options-record/store"
)

// APIOptions configure the restore API listener of `serve`.
type APIOptions struct {
	// Addr is the HTTPS address of the restore API; empty disables it.
	Addr string
	// TLSCertFile and TLSKeyFile serve the API; empty reuses the webhook's.
	TLSCertFile, TLSKeyFile string
	// TokenFile enables the standalone mode: a read-only API on loopback
	// whose callers present this static token (no cluster needed).
	TokenFile string
}

// runAPI starts the restore API and returns a function that stops it.
func runAPI(ctx context.Context, o *APIOptions, so *ServeOptions, st *store.Store, log *slog.Logger) (func(context.Context) error, error) {
	return nil, errors.New("the restore API is not built yet")
}
