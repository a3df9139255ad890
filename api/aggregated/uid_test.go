package aggregated

import (
	"strings"
	"testing"
)

func TestTrustRemoteUID(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.36.3": true, "v1.32.0": true, "v1.32.0-rc.1": true, "v1.33.2-eks-1234": true, "v2.0.0": true,
		"v1.31.9": false, "v1.28.0+k3s1": false, "": false, "garbage": false,
	} {
		if got := TrustRemoteUID(v); got != want {
			t.Errorf("TrustRemoteUID(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNewRefusesAnyFrontProxyCertificate: without allowed names every
// certificate the front-proxy CA signed would be taken as the proxy.
func TestNewRefusesAnyFrontProxyCertificate(t *testing.T) {
	_, err := New(Options{RequestHeaderCAFile: "ca.crt"})
	if err == nil || !strings.Contains(err.Error(), "allowed names") {
		t.Fatalf("New without allowed names: %v, want a refusal", err)
	}
}
