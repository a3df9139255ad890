package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/options-record/options-record/test/framework/controlplane"
)

func (s *aggScenario) frontProxyOnly(t *testing.T) {
	certFile, keyFile := s.w.cp.FrontProxyClientFiles()
	proxyCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if code := s.getAggregatedPort(t, nil, map[string]string{"Authorization": "Bearer " + s.w.cp.Token("alice")}); code != http.StatusUnauthorized {
		t.Errorf("alice's bearer token, straight to the port: %d, want 401", code)
	}
	if code := s.getAggregatedPort(t, nil, nil); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
	if code := s.getAggregatedPort(t, &proxyCert, map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:authenticated"}); code != http.StatusOK {
		t.Errorf("the front proxy for alice: %d, want 200", code)
	}
	if code := s.getAggregatedPort(t, &proxyCert, map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:authenticated",
		"Impersonate-User": controlplane.AdminUser, "Impersonate-Group": "system:masters"}); code != http.StatusForbidden {
		t.Errorf("impersonation headers through the port: %d, want 403", code)
	}
}

// getAggregatedPort lists the shop's deletions straight from the
// aggregated port, with the client certificate cert (nil: none) and the
// headers hdr, and returns the status code.
func (s *aggScenario) getAggregatedPort(t *testing.T, cert *tls.Certificate, hdr map[string]string) int {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.w.caPEM)
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, "https://"+s.w.aggAddr+"/apis/record.optionsrecord.io/v1alpha1/namespaces/"+s.ns+"/deletions", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (s *aggScenario) sinkNeverWatches(t *testing.T) {
	f, err := os.Open(s.w.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verbs := map[string]int{}
	frontProxyGets := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			Stage     string `json:"stage"`
			ObjectRef *struct {
				Resource  string `json:"resource"`
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != sinkUser {
			continue
		}
		if ev.Verb == "watch" {
			verbs["watch"]++ // any stage: an open watch has only ResponseStarted
			continue
		}
		if ev.Stage != "ResponseComplete" {
			continue
		}
		verbs[ev.Verb]++
		// The generic apiserver's authentication would list and watch
		// kube-system/extension-apiserver-authentication; the sink GETs
		// it instead (the front-proxy CA). (Its baselines LIST the
		// ConfigMaps of the namespaces its rules cover, e2e-*.)
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == "kube-system" {
			if ev.Verb == "get" && ev.ObjectRef.Name == "extension-apiserver-authentication" {
				frontProxyGets++
			} else {
				t.Errorf("the sink read ConfigMaps of kube-system (%s %s)", ev.Verb, ev.ObjectRef.Name)
			}
		}
	}
	if verbs["list"] == 0 {
		t.Errorf("the audit log shows no LIST by the sink: %v (is the instrumentation working?)", verbs)
	}
	if verbs["watch"] > 0 {
		t.Errorf("the sink issued %d watches", verbs["watch"])
	}
	if frontProxyGets == 0 {
		t.Error("the sink never read the front-proxy CA from kube-system/extension-apiserver-authentication")
	}
	t.Logf("the sink's requests seen by the apiserver: %v (%d GETs of the front-proxy CA)", verbs, frontProxyGets)
}

// impersonatedWrites lists the writes of one object in the kube-apiserver's
// audit log, as "verb by user as impersonated-user".
func impersonatedWrites(t *testing.T, w *world, resource, ns, name string) []string {
	t.Helper()
	f, err := os.Open(w.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb  string `json:"verb"`
			Stage string `json:"stage"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ImpersonatedUser *struct {
				Username string `json:"username"`
			} `json:"impersonatedUser"`
			ObjectRef *struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
			DryRun bool
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil ||
			ev.ObjectRef.Resource != resource || ev.ObjectRef.Namespace != ns || ev.ObjectRef.Name != name ||
			(ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch") {
			continue
		}
		as := ""
		if ev.ImpersonatedUser != nil {
			as = ev.ImpersonatedUser.Username
		}
		out = append(out, ev.Verb+" by "+ev.User.Username+" as "+as)
	}
	return out
}
