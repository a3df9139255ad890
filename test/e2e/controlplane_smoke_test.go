package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestControlPlaneSmoke checks the e2e plumbing end to end: a real
// kube-apiserver, running the shipped audit policy and a webhook kubeconfig
// rendered from the shipped template, delivers ResponseComplete events for a
// non-admin user's create and delete to an HTTPS server that authenticates
// the apiserver by client certificate and bearer token.
func TestControlPlaneSmoke(t *testing.T) {
	const (
		user      = "smoke-alice"
		sinkToken = "smoke-sink-token"
		sinkCN    = "smoke-kube-apiserver"
	)

	sinkCA, err := certs.NewCA("smoke-sink-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, err := sinkCA.Issue("127.0.0.1", []string{"127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := sinkCA.Issue(sinkCN, nil, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := client.CertPEM, client.KeyPEM
	pool := x509.NewCertPool()
	pool.AddCert(sinkCA.Cert)
	kp, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}

	sink := &smokeSink{t: t, token: sinkToken, clientCN: sinkCN}
	srv := httptest.NewUnstartedServer(sink)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{kp},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	webhook := controlplane.WriteWebhookKubeconfig(t, controlplane.WebhookKubeconfig{
		Server:         srv.URL + "/audit/v1/events",
		CAData:         sinkCA.CertPEM,
		ClientCertData: clientCert,
		ClientKeyData:  clientKey,
		Token:          sinkToken,
	})
	cp := controlplane.Start(t, controlplane.Options{
		Users:                  []controlplane.User{{Name: user, Groups: []string{"smoke-developers"}}},
		AuditPolicyFile:        controlplane.PolicyFile(t),
		AuditWebhookConfigFile: webhook,
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	alice, err := kubernetes.NewForConfig(cp.UserConfig(user))
	if err != nil {
		t.Fatal(err)
	}

	const ns, name = "smoke", "smoke-config"
	if _, err := admin.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// "edit" is an aggregated ClusterRole: this also checks that
	// kube-controller-manager's aggregation controller filled it.
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to edit: %v", user, err)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"greeting": "hello"},
	}
	// The authorizer sees a new binding, and the aggregation controller
	// fills "edit", a moment later (seconds on a busy machine): retry while
	// the create is forbidden.
	var created *corev1.ConfigMap
	eventually(t, 30*time.Second, user+" creates the ConfigMap", func() error {
		var err error
		created, err = alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	// "edit" is aggregated from several roles, which the controller may
	// add in more than one update: a create allowed does not yet mean a
	// read is (seen: create allowed, get forbidden, on a busy machine).
	eventually(t, 30*time.Second, user+" reads the ConfigMap", func() error {
		_, err := alice.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("%s reads the ConfigMap: %v", user, err)
		}
		return err
	})
	eventually(t, 30*time.Second, user+" deletes the ConfigMap", func() error {
		err := alice.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("%s deletes the ConfigMap: %v", user, err)
		}
		return err
	})

	// The apiserver sends a batch at least every second.
	isConfigMap := func(verb string) func(e auditv1.Event) bool {
		return func(e auditv1.Event) bool {
			return e.Verb == verb && e.Stage == auditv1.StageResponseComplete && e.ObjectRef != nil &&
				e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name &&
				// not a create refused while RBAC caught up (retried above)
				(verb != "create" || e.ResponseStatus == nil || e.ResponseStatus.Code != 403)
		}
	}
	create := sink.waitFor(ctx, t, "ResponseComplete create of the ConfigMap", isConfigMap("create"))
	del := sink.waitFor(ctx, t, "ResponseComplete delete of the ConfigMap", isConfigMap("delete"))

	for _, e := range []auditv1.Event{create, del} {
		if e.User.Username != user {
			t.Errorf("%s event %s: user %q, want %q", e.Verb, e.AuditID, e.User.Username, user)
		}
		if e.Level != auditv1.LevelRequestResponse {
			t.Errorf("%s event %s: level %s, want RequestResponse", e.Verb, e.AuditID, e.Level)
		}
		if e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
			t.Errorf("%s event %s: response status %+v, want success", e.Verb, e.AuditID, e.ResponseStatus)
		}
		if e.ResponseObject == nil {
			t.Errorf("%s event %s: no responseObject", e.Verb, e.AuditID)
		}
	}
	if create.ResponseObject != nil {
		var got corev1.ConfigMap
		if err := json.Unmarshal(create.ResponseObject.Raw, &got); err != nil {
			t.Errorf("decode create responseObject: %v", err)
		} else {
			if got.UID != created.UID || got.Data["greeting"] != "hello" {
				t.Errorf("create responseObject is %s/%s uid %s data %v, want uid %s with the data",
					got.Namespace, got.Name, got.UID, got.Data, created.UID)
			}
			if len(got.ManagedFields) != 0 {
				t.Errorf("create responseObject has managedFields; the policy sets omitManagedFields")
			}
		}
	}

	// The shipped policy: no RequestReceived stage, no reads, no leases.
	for _, e := range sink.all() {
		switch {
		case e.Stage == auditv1.StageRequestReceived:
			t.Errorf("got a RequestReceived event (%s %s); the policy omits that stage", e.Verb, e.RequestURI)
		case e.Verb == "get" || e.Verb == "list" || e.Verb == "watch":
			t.Errorf("got a read event %s %s by %s; the policy drops reads", e.Verb, e.RequestURI, e.User.Username)
		case e.ObjectRef != nil && e.ObjectRef.Resource == "leases":
			t.Errorf("got a leases event %s %s; the policy drops leases", e.Verb, e.RequestURI)
		}
	}
	if errs := sink.errors(); len(errs) > 0 {
		t.Errorf("sink rejected requests: %s", strings.Join(errs, "; "))
	}
	summary := map[string]int{}
	for _, e := range sink.all() {
		res := e.RequestURI
		if e.ObjectRef != nil {
			res = e.ObjectRef.Resource
		}
		summary[fmt.Sprintf("%s %s %s", e.User.Username, e.Verb, res)]++
	}
	t.Logf("sink received %d events in %d batches: %v", len(sink.all()), sink.batchCount(), summary)
}

// smokeSink is a minimal audit webhook receiver that keeps every event.
type smokeSink struct {
	t        testing.TB
	token    string
	clientCN string

	mu      sync.Mutex
	events  []auditv1.Event
	batches int
	errs    []string
	changed chan struct{} // closed and replaced when events arrive
}

func (s *smokeSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		s.mu.Lock()
		s.errs = append(s.errs, msg)
		s.mu.Unlock()
		http.Error(w, msg, code)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/audit/v1/events" {
		fail(http.StatusNotFound, "unexpected %s %s", r.Method, r.URL.Path)
		return
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != s.clientCN {
		fail(http.StatusUnauthorized, "no client certificate for %s", s.clientCN)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+s.token {
		fail(http.StatusUnauthorized, "bad Authorization header %q", got)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		fail(http.StatusBadRequest, "read body: %v", err)
		return
	}
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil {
		fail(http.StatusBadRequest, "decode EventList: %v", err)
		return
	}
	if list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1" {
		fail(http.StatusBadRequest, "unexpected %s %s", list.APIVersion, list.Kind)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, list.Items...)
	s.batches++
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *smokeSink) all() []auditv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]auditv1.Event(nil), s.events...)
}

func (s *smokeSink) batchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches
}

func (s *smokeSink) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// waitFor returns the first received event that matches, waiting for new
// batches until ctx ends.
func (s *smokeSink) waitFor(ctx context.Context, t testing.TB, what string, match func(auditv1.Event) bool) auditv1.Event {
	t.Helper()
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if match(e) {
				s.mu.Unlock()
				return e
			}
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no %s received (%d events in %d batches; sink errors: %v)",
				what, len(s.all()), s.batchCount(), s.errors())
		}
	}
}
