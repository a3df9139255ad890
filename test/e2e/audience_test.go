package e2e

import (
	"context"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// With --api-audiences, the restore API accepts only tokens issued for it
// (`kubectl create token SA --audience options-record`), checked by the
// real apiserver's TokenReview: a token made for the kube-apiserver, or for
// any other service, is refused.
func TestAPIAudiencesOnARealControlPlane(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{DisableControllerManager: true})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(audiences ...string) string {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "operator",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	forAPI, forApiserver, forOther := token("options-record"), token(), token("vault")

	check := func(audiences []string, tok string) bool {
		t.Helper()
		authn, _, err := restoreapi.DelegatingAuth(admin, admin, restoreapi.AuthCacheTTL, audiences...)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://sink/api/v1/clusters/e2e/changes", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, ok, err := authn.AuthenticateRequest(req)
		return ok && err == nil && resp.User.GetName() == "system:serviceaccount:default:operator"
	}
	tests := []struct {
		name      string
		audiences []string
		token     string
		want      bool
	}{
		{"audience set: a token for the API", []string{"options-record"}, forAPI, true},
		{"audience set: a token for the kube-apiserver", []string{"options-record"}, forApiserver, false},
		{"audience set: a token for another service", []string{"options-record"}, forOther, false},
		{"no audience: the apiserver's own tokens", nil, forApiserver, true},
		{"no audience: a token for another service", nil, forOther, false},
	}
	for _, tt := range tests {
		if got := check(tt.audiences, tt.token); got != tt.want {
			t.Errorf("%s: authenticated = %v, want %v", tt.name, got, tt.want)
		}
	}
}
