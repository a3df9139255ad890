package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/test/gen"
)

// TestServeTakesManagedClusterSources: serve's own wiring serves EKS's
// Firehose endpoint beside the webhook (same TLS, same address) and
// consumes AKS's audit log from an Event Hubs Kafka endpoint (kfake, with
// SASL PLAIN as $ConnectionString), into the one record.
func TestServeTakesManagedClusterSources(t *testing.T) {
	t.Parallel()
	const connStr = "Endpoint=sb://t.servicebus.windows.net/;SharedAccessKeyName=l;SharedAccessKey=k"
	hub, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "aks-audit"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "$ConnectionString", connStr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	dir := t.TempDir()
	token := writeFile(t, dir, "token", "webhook-token\n")
	webhook, c, dsn := serveInProcess(t, ServeOptions{Cluster: "default", TokenFile: token,
		Firehose: &FirehoseOptions{AccessKeyFile: writeFile(t, dir, "firehose-key", "the-access-key\n"),
			LogGroups: map[string]string{"/aws/eks/prod/cluster": "eks-prod"}},
		EventHubs: &EventHubsOptions{Brokers: hub.ListenAddrs(), Name: "aks-audit", Group: "$Default",
			ConnectionStringFile: writeFile(t, dir, "conn", connStr+"\n"), Cluster: "aks-prod"},
	})
	event := func(name string) *auditv1.Event {
		return gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name(name),
			gen.Response(gen.ConfigMap("prod", name, "uid-"+name, 5, nil)))
	}
	line := func(ev *auditv1.Event) string { return strings.TrimSuffix(string(gen.Lines(ev)), "\n") }

	// EKS: a Firehose delivery of a CloudWatch Logs DATA_MESSAGE.
	var msg bytes.Buffer
	zw := gzip.NewWriter(&msg)
	_ = json.NewEncoder(zw).Encode(map[string]any{"messageType": "DATA_MESSAGE", "owner": "123456789012",
		"logGroup": "/aws/eks/prod/cluster", "logStream": "kube-apiserver-audit-1", "subscriptionFilters": []string{"f"},
		"logEvents": []map[string]any{{"id": "1", "timestamp": time.Now().UnixMilli(), "message": line(event("from-eks"))}}})
	_ = zw.Close()
	body, _ := json.Marshal(map[string]any{"requestId": "req-1", "timestamp": time.Now().UnixMilli(),
		"records": []map[string][]byte{{"data": msg.Bytes()}}})
	req, _ := http.NewRequest(http.MethodPost, "https://"+webhook+FirehosePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Firehose-Request-Id", "req-1")
	req.Header.Set("X-Amz-Firehose-Access-Key", "the-access-key")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(ans), `"requestId":"req-1"`) {
		t.Fatalf("Firehose delivery: %d %s", resp.StatusCode, ans)
	}
	// The webhook is still the webhook on every other path.
	if code := post(t, c, webhook, "webhook-token", gen.EventList(event("from-webhook"))); code != http.StatusOK {
		t.Fatalf("webhook: %d", code)
	}

	// AKS: a diagnostic-settings document on the event hub.
	doc, _ := json.Marshal(map[string]any{"records": []map[string]any{{"category": "kube-audit-admin",
		"time": time.Now().UTC().Format(time.RFC3339Nano), "properties": map[string]any{"log": line(event("from-aks"))}}}})
	prod, err := kgo.NewClient(kgo.SeedBrokers(hub.ListenAddrs()...), kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: connStr}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "aks-audit", Value: doc}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for count(t, dsn, "SELECT count(*) FROM object_history WHERE name = 'from-aks' AND cluster = 'aks-prod'") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the Event Hubs record was never stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, tc := range []struct{ name, cluster string }{{"from-eks", "eks-prod"}, {"from-webhook", "default"}} {
		if n := count(t, dsn, "SELECT count(*) FROM object_history WHERE name = '"+tc.name+"' AND cluster = '"+tc.cluster+"'"); n != 1 {
			t.Errorf("%s: %d rows under cluster %s, want 1", tc.name, n, tc.cluster)
		}
	}
}

func TestManagedSourcesRefuseIncompleteOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    ServeOptions
		want string
	}{
		{"log groups without a key", ServeOptions{Firehose: &FirehoseOptions{LogGroups: map[string]string{"/aws/eks/a/cluster": "a"}}}, "--firehose-access-key-file"},
		{"a log group without a cluster", ServeOptions{Firehose: &FirehoseOptions{AccessKeyFile: "k", LogGroups: map[string]string{"/aws/eks/a/cluster": ""}}}, "LOG_GROUP=CLUSTER"},
		{"a hub without brokers", ServeOptions{EventHubs: &EventHubsOptions{Name: "h", Group: "$Default"}}, "--eventhubs-brokers"},
		{"brokers without a hub", ServeOptions{EventHubs: &EventHubsOptions{Brokers: []string{"b:9093"}, Group: "$Default"}}, "--eventhubs-name"},
		{"no consumer group", ServeOptions{EventHubs: &EventHubsOptions{Brokers: []string{"b:9093"}, Name: "h"}}, "--eventhubs-consumer-group"},
		{"complete", ServeOptions{Firehose: &FirehoseOptions{AccessKeyFile: "k"},
			EventHubs: &EventHubsOptions{Brokers: []string{"b:9093"}, Name: "h", Group: "$Default"}}, ""},
	} {
		err := tc.o.validateManaged()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	o := ServeOptions{Roles: []Role{RoleAPI}, API: &APIOptions{Addr: "127.0.0.1:0"}, Firehose: &FirehoseOptions{AccessKeyFile: "k"},
		Database: DatabaseOptions{URL: "postgres://x"}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "role ingest") {
		t.Errorf("the api role with --firehose-*: %v", err)
	}
}
