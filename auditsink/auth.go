package auditsink

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"
)

// ClientConfig is one apiserver allowed to post audit events, and the
// cluster its events are recorded under.
type ClientConfig struct {
	// Cluster is the name stored with every row from this client.
	Cluster string `json:"cluster"`
	// TokenFile holds a bearer token the client presents.
	TokenFile string `json:"tokenFile,omitempty"`
	// CommonName is the subject CN of the client certificate the client
	// presents, verified against the webhook's client CA.
	CommonName string `json:"commonName,omitempty"`
}

// ClientsFile is the --webhook-clients-file format.
type ClientsFile struct {
	Clients []ClientConfig `json:"clients"`
}

// LoadClients reads a --webhook-clients-file.
func LoadClients(path string) ([]ClientConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read webhook clients: %w", err)
	}
	var f ClientsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parse webhook clients %s: %w", path, err)
	}
	return f.Clients, nil
}

// Authenticator maps the caller of the webhook to a cluster: by its client
// certificate (already verified by the TLS layer against the client CA) or
// by its bearer token. A caller it does not know gets no cluster.
//
// Built by NewReloadingAuthenticator, it re-reads its credentials (token
// files, clients file) at most every interval, when a request comes, so
// that a rotated token takes effect without a restart; credentials that do
// not load keep the ones in force.
type Authenticator struct {
	set atomic.Pointer[authSet]

	// Reloading, when load is set.
	load     func() ([]ClientConfig, string, error)
	interval time.Duration
	log      *slog.Logger
	mu       sync.Mutex // held by the one request that reloads; others go on
	checked  time.Time
	lastErr  string
}

// authSet is one immutable set of credentials.
type authSet struct {
	tokens  map[[32]byte]string // SHA-256 of the token → cluster
	names   map[string]string   // certificate CN → cluster
	anyCert string              // cluster for any verified certificate, if set
}

func (s *authSet) equal(o *authSet) bool {
	return maps.Equal(s.tokens, o.tokens) && maps.Equal(s.names, o.names) && s.anyCert == o.anyCert
}

// NewAuthenticator builds an Authenticator. anyCertCluster, when non-empty,
// is the cluster of any client certificate the TLS layer verified whose CN is
// not listed (the single-cluster set-up).
func NewAuthenticator(clients []ClientConfig, anyCertCluster string) (*Authenticator, error) {
	set, err := newAuthSet(clients, anyCertCluster)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{}
	a.set.Store(set)
	return a, nil
}

// AuthenticatorOptions configure an Authenticator that follows its
// credential files.
type AuthenticatorOptions struct {
	// Load reads the clients and the cluster of any verified certificate,
	// as NewAuthenticator takes them (from --webhook-clients-file and
	// --webhook-token-file); required.
	Load func() (clients []ClientConfig, anyCertCluster string, err error)
	// Interval is how often the files are read again at most (default 15 s).
	Interval time.Duration
	Logger   *slog.Logger
}

// NewReloadingAuthenticator loads the credentials once (an error is fatal
// at start) and again at most every Interval.
func NewReloadingAuthenticator(opts AuthenticatorOptions) (*Authenticator, error) {
	if opts.Load == nil {
		return nil, errors.New("auditsink: a reloading authenticator needs Load")
	}
	if opts.Interval <= 0 {
		opts.Interval = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	clients, anyCert, err := opts.Load()
	if err != nil {
		return nil, err
	}
	a, err := NewAuthenticator(clients, anyCert)
	if err != nil {
		return nil, err
	}
	a.load, a.interval, a.log, a.checked = opts.Load, opts.Interval, opts.Logger, time.Now()
	return a, nil
}

// maybeReload reloads the credentials if the interval has passed and no
// other request is at it.
func (a *Authenticator) maybeReload() {
	if a.load == nil || !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	now := time.Now()
	if now.Sub(a.checked) < a.interval {
		return
	}
	a.checked = now
	set, err := a.reload()
	if err != nil {
		// Logged once per distinct error, not every interval.
		if msg := err.Error(); msg != a.lastErr {
			a.lastErr = msg
			a.log.Error("webhook credentials not reloaded; the ones in force stay", "err", err)
		}
		return
	}
	a.lastErr = ""
	if set.equal(a.set.Load()) {
		return
	}
	a.set.Store(set)
	a.log.Info("webhook credentials reloaded", "tokens", len(set.tokens), "common_names", len(set.names), "any_certificate", set.anyCert != "")
}

func (a *Authenticator) reload() (*authSet, error) {
	clients, anyCert, err := a.load()
	if err != nil {
		return nil, err
	}
	return newAuthSet(clients, anyCert)
}

func newAuthSet(clients []ClientConfig, anyCertCluster string) (*authSet, error) {
	a := &authSet{tokens: map[[32]byte]string{}, names: map[string]string{}, anyCert: anyCertCluster}
	for i, c := range clients {
		if c.Cluster == "" {
			return nil, fmt.Errorf("webhook client %d: no cluster", i)
		}
		if c.TokenFile == "" && c.CommonName == "" {
			return nil, fmt.Errorf("webhook client %d (%s): needs tokenFile or commonName", i, c.Cluster)
		}
		// One credential names one cluster: listed twice, the last one
		// would win silently and record a cluster's events under another.
		if c.TokenFile != "" {
			tok, err := ReadToken(c.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("webhook client %d (%s): %w", i, c.Cluster, err)
			}
			k := sha256.Sum256([]byte(tok))
			if other, ok := a.tokens[k]; ok && other != c.Cluster {
				return nil, fmt.Errorf("webhook client %d (%s): its token is also cluster %s's", i, c.Cluster, other)
			}
			a.tokens[k] = c.Cluster
		}
		if c.CommonName != "" {
			if other, ok := a.names[c.CommonName]; ok && other != c.Cluster {
				return nil, fmt.Errorf("webhook client %d (%s): common name %q is also cluster %s's", i, c.Cluster, c.CommonName, other)
			}
			a.names[c.CommonName] = c.Cluster
		}
	}
	if len(a.tokens) == 0 && len(a.names) == 0 && a.anyCert == "" {
		return nil, errors.New("no webhook client can authenticate: configure a token or a client CA")
	}
	return a, nil
}

// ReadToken reads a token file: its first line, trimmed. An empty token is an error.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	tok := strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// Authenticate returns the cluster of the request's caller, or false.
func (a *Authenticator) Authenticate(r *http.Request) (string, bool) {
	a.maybeReload()
	return a.set.Load().authenticate(r)
}

func (a *authSet) authenticate(r *http.Request) (string, bool) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		if c, ok := a.names[cn]; ok {
			return c, true
		}
		if a.anyCert != "" {
			return a.anyCert, true
		}
	}
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && tok != "" {
		// The lookup is keyed by a digest, so its timing tells nothing
		// about the stored tokens.
		if c, ok := a.tokens[sha256.Sum256([]byte(tok))]; ok {
			return c, true
		}
	}
	return "", false
}
