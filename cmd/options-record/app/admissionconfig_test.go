package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"
)

func TestAdmissionConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, _, err := certutil.GenerateSelfSignedCertKey("options-record-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	keyOnly := filepath.Join(dir, "key.pem")
	os.WriteFile(caFile, ca, 0o600)
	os.WriteFile(keyOnly, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600)
	rules := RulesOptions{Files: []string{"../../../filter/testdata/webhook/exact-namespaces.rules.yaml"}, Namespace: "options-record"}

	tests := []struct {
		name    string
		o       AdmissionConfigOptions
		want    admissionregistrationv1.WebhookClientConfig
		wantErr string
	}{
		{name: "service", o: AdmissionConfigOptions{ServiceName: "options-record-webhook", ServicePort: 8444, CAFile: caFile},
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
				Namespace: "options-record", Name: "options-record-webhook", Port: ptr(int32(8444)), Path: ptr("/observe")}}},
		{name: "url", o: AdmissionConfigOptions{URL: "https://10.0.0.5:8444"},
			want: admissionregistrationv1.WebhookClientConfig{URL: ptr("https://10.0.0.5:8444/observe")}},
		{name: "url with path", o: AdmissionConfigOptions{URL: "https://sink.example.com/x/observe"},
			want: admissionregistrationv1.WebhookClientConfig{URL: ptr("https://sink.example.com/x/observe")}},
		{name: "plain http", o: AdmissionConfigOptions{URL: "http://10.0.0.5:8444"}, wantErr: "--url"},
		{name: "url with a user", o: AdmissionConfigOptions{URL: "https://u:p@10.0.0.5"}, wantErr: "--url"},
		{name: "no certificate in the CA file", o: AdmissionConfigOptions{ServiceName: "s", ServicePort: 1, CAFile: keyOnly}, wantErr: "--ca-file"},
		{name: "missing CA file", o: AdmissionConfigOptions{ServiceName: "s", ServicePort: 1, CAFile: filepath.Join(dir, "none")}, wantErr: "--ca-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			tt.o.Rules, tt.o.Out = rules, &out
			err := AdmissionConfig(context.Background(), tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(out.Bytes(), &c); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if len(c.Webhooks) != 1 || c.Webhooks[0].Name != "observe.optionsrecord.io" || len(c.Webhooks[0].Rules) == 0 {
				t.Fatalf("unexpected configuration:\n%s", out.String())
			}
			got, _ := yaml.Marshal(c.Webhooks[0].ClientConfig)
			want, _ := yaml.Marshal(tt.want)
			if !bytes.Equal(got, want) {
				t.Errorf("clientConfig:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
