// Package pubsubtest is the tests' stand-in for GKE and Google: a shipper
// that turns an apiserver's audit event into the Cloud Logging LogEntry
// GKE writes for it (ToGKE) and the Pub/Sub push that carries it
// (PushBody), and a token issuer whose key set a Verifier can trust
// (Google). The pubsub package's tests and the e2e tests share it.
//
// The shipper does what GKE's Log Router sink and a push subscription do
// to an apiserver's audit event, as Google documents it (see the pubsub
// package's sources): the event becomes a LogEntry whose protoPayload is
// an AuditLog, the entry is a Pub/Sub message's data, and the message is
// pushed with a Google-signed OIDC token.
package pubsubtest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/pubsub"
)

// ToGKE is the reverse of the conversion: the LogEntry GKE writes for ev.
func ToGKE(t testing.TB, ev *auditv1.Event) pubsub.LogEntry {
	t.Helper()
	ref := ev.ObjectRef
	group := "core"
	if ref.APIGroup != "" {
		group = ref.APIGroup
	}
	parts := []string{group, ref.APIVersion}
	if ref.Namespace != "" {
		parts = append(parts, "namespaces", ref.Namespace)
	}
	parts = append(parts, ref.Resource)
	if ref.Name != "" {
		parts = append(parts, ref.Name)
	}
	if ref.Subresource != "" {
		parts = append(parts, ref.Subresource)
	}
	// methodName: io.k8s.<group, its domain reversed, k8s.io dropped>.<version>.<resource>[.<subresource>].<verb>
	mgroup := "core"
	if ref.APIGroup != "" {
		segs := strings.Split(strings.TrimSuffix(ref.APIGroup, ".k8s.io"), ".")
		for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
			segs[i], segs[j] = segs[j], segs[i]
		}
		mgroup = strings.Join(segs, ".")
	}
	method := "io.k8s." + mgroup + "." + ref.APIVersion + "." + ref.Resource
	if ref.Subresource != "" {
		method += "." + ref.Subresource
	}
	method += "." + ev.Verb
	// insertId: Cloud Logging's; derived here from the auditID so that
	// the same event always gets the same one, as a redelivery does.
	sum := sha256.Sum256([]byte(ev.AuditID))
	insertID := hex.EncodeToString(sum[:8])
	p := &pubsub.AuditLog{
		Type: "type.googleapis.com/google.cloud.audit.AuditLog", ServiceName: "k8s.io",
		MethodName: method, ResourceName: strings.Join(parts, "/"),
		AuthenticationInfo: &pubsub.AuthenticationInfo{PrincipalEmail: ev.User.Username},
		AuthorizationInfo: []pubsub.AuthorizationInfo{{Resource: strings.Join(parts, "/"), Permission: method,
			Granted: ev.Annotations["authorization.k8s.io/decision"] != "forbid"}},
		RequestMetadata: &pubsub.RequestMetadata{CallerSuppliedUserAgent: ev.UserAgent},
	}
	if ev.ImpersonatedUser != nil {
		// kubectl --as: principalEmail is who authenticated, the
		// authority selector whom the request impersonated.
		p.AuthenticationInfo.AuthoritySelector = ev.ImpersonatedUser.Username
	}
	if len(ev.SourceIPs) > 0 {
		p.RequestMetadata.CallerIP = ev.SourceIPs[0]
	}
	if c := ev.ResponseStatus; c != nil && (c.Code < 200 || c.Code > 299) {
		p.Status = &pubsub.RPCStatus{Code: HTTPToRPC(int(c.Code)), Message: c.Message}
	} else {
		p.Status = &pubsub.RPCStatus{}
	}
	if ev.RequestObject != nil {
		p.Request = WithType(t, ev.RequestObject.Raw)
	}
	if ev.ResponseObject != nil {
		p.Response = WithType(t, ev.ResponseObject.Raw)
	}
	logName := "projects/proj/logs/cloudaudit.googleapis.com%2Factivity"
	if ev.Verb == "get" || ev.Verb == "list" || ev.Verb == "watch" {
		logName = "projects/proj/logs/cloudaudit.googleapis.com%2Fdata_access"
	}
	received := ev.StageTimestamp.Add(3 * time.Second)
	return pubsub.LogEntry{
		InsertID: insertID, LogName: logName, Timestamp: ev.StageTimestamp.Time, ReceiveTimestamp: &received,
		Severity: "NOTICE", Labels: ev.Annotations,
		Resource:     &pubsub.MonitoredRes{Type: "k8s_cluster", Labels: map[string]string{"project_id": "proj", "location": "europe-west1", "cluster_name": "prod"}},
		Operation:    &pubsub.Operation{ID: insertID, Producer: "k8s.io", First: true, Last: true},
		ProtoPayload: p,
	}
}

// WithType adds GKE's "@type" member to a body: "<group>.k8s.io/<version>.<Kind>".
func WithType(t testing.TB, raw []byte) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw // a JSON patch: an array, which a Struct cannot hold; GKE drops it
	}
	av, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	group, version := "core", av
	if i := strings.IndexByte(av, '/'); i >= 0 {
		group, version = av[:i], av[i+1:]
	}
	if !strings.HasSuffix(group, ".k8s.io") {
		group += ".k8s.io"
	}
	m["@type"] = group + "/" + version + "." + kind
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// HTTPToRPC maps an HTTP status to the google.rpc.Code Google's APIs use.
func HTTPToRPC(code int) int {
	switch code {
	case 400, 422:
		return 3
	case 401:
		return 16
	case 403:
		return 7
	case 404:
		return 5
	case 409:
		return 6
	case 429:
		return 8
	case 503:
		return 14
	}
	return 13
}

// PushBody is the body of a push of entry: the entry's JSON as the
// message's data (base64 in JSON, as Go encodes a []byte).
func PushBody(t testing.TB, entry pubsub.LogEntry, publish time.Time) []byte {
	t.Helper()
	data, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"message": map[string]any{
			"data": data, "messageId": "m-" + entry.InsertID, "message_id": "m-" + entry.InsertID,
			"publishTime": publish.UTC().Format(time.RFC3339Nano), "publish_time": publish.UTC().Format(time.RFC3339Nano),
			"attributes": map[string]string{"logging.googleapis.com/timestamp": entry.Timestamp.UTC().Format(time.RFC3339Nano)},
		},
		"subscription": "projects/proj/subscriptions/options-record",
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// Google is a test stand-in for Google's token issuer: an RSA key, the
// key set served over HTTPS, and tokens as a push subscription gets them.
type Google struct {
	Key  *rsa.PrivateKey
	KID  string
	JWKS *httptest.Server
	// Audience and Account are what Token puts in a valid token and
	// Verifier expects.
	Audience, Account string
}

// NewGoogle is a Google whose valid tokens name audience and account.
func NewGoogle(t testing.TB, audience, account string) *Google {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &Google{Key: key, KID: "test-key-1", Audience: audience, Account: account}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: g.KID, Algorithm: "RS256", Use: "sig"}}}
	g.JWKS = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(g.JWKS.Close)
	return g
}

// Claims are a push token's claims; Token's defaults are a valid token.
type Claims struct {
	Issuer        string           `json:"iss"`
	Audience      jwt.Audience     `json:"aud"`
	Expiry        *jwt.NumericDate `json:"exp"`
	IssuedAt      *jwt.NumericDate `json:"iat"`
	Subject       string           `json:"sub"`
	Email         string           `json:"email"`
	EmailVerified bool             `json:"email_verified"`
}

// Token is a valid token, changed by modify.
func (g *Google) Token(t testing.TB, modify ...func(*Claims)) string {
	t.Helper()
	now := time.Now()
	c := Claims{Issuer: "https://accounts.google.com", Audience: jwt.Audience{g.Audience},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
		Subject: "1234567890", Email: g.Account, EmailVerified: true}
	for _, m := range modify {
		m(&c)
	}
	return g.Sign(t, g.Key, c)
}

// Sign signs c with key under g's key id.
func (g *Google) Sign(t testing.TB, key *rsa.PrivateKey, c Claims) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", g.KID))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Verifier is a Verifier trusting g's keys, for its audience and account.
func (g *Google) Verifier(t testing.TB) *pubsub.Verifier {
	t.Helper()
	v, err := pubsub.NewVerifier(t.Context(), pubsub.VerifierOptions{Audience: g.Audience, ServiceAccount: g.Account,
		JWKSURL: g.JWKS.URL, Client: g.JWKS.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Push posts body to url with the bearer token and returns the status.
func Push(t testing.TB, c *http.Client, url, token string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}
