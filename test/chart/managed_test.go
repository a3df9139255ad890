package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartWiresManagedClusterSources: the managedClusters values give
// the ingest StatefulSet the serve flags of the Firehose endpoint, the
// Pub/Sub push endpoint and the Event Hubs consumer, which serve's own flag parser takes, with their
// Secrets mounted where the flags point.
func TestChartWiresManagedClusterSources(t *testing.T) {
	r := renderChart(t, loadChart(t), map[string]any{"managedClusters": map[string]any{
		"firehose": map[string]any{"accessKeySecretName": "firehose-key", "logGroups": []any{"/aws/eks/prod/cluster=prod"}},
		"gke":      map[string]any{"audience": "https://sink.example/gke/pubsub", "serviceAccount": "push@p.iam.gserviceaccount.com", "cluster": "gke-prod"},
		"eventHubs": map[string]any{"brokers": "prod-audit.servicebus.windows.net:9093", "name": "aks-audit",
			"connectionStringSecretName": "eventhubs", "cluster": "aks-prod"},
	}})
	var sts *unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == "StatefulSet" {
			sts = o
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet rendered")
	}
	containers, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	has := map[string]bool{}
	for _, a := range args {
		has[a] = true
	}
	// The flags serve defines (docs/command-line-flags.txt), pointing at
	// the mounted Secrets.
	for _, want := range []string{
		"--firehose-access-key-file=/etc/options-record/firehose/key",
		"--firehose-log-group=/aws/eks/prod/cluster=prod",
		"--gke-pubsub-audience=https://sink.example/gke/pubsub",
		"--gke-pubsub-service-account=push@p.iam.gserviceaccount.com",
		"--gke-pubsub-cluster=gke-prod",
		"--eventhubs-brokers=prod-audit.servicebus.windows.net:9093",
		"--eventhubs-name=aks-audit",
		"--eventhubs-consumer-group=$Default",
		"--eventhubs-connection-string-file=/etc/options-record/eventhubs/connection-string",
		"--eventhubs-cluster=aks-prod",
	} {
		if !has[want] {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	flags, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "command-line-flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args[1:] {
		name, _, _ := strings.Cut(a, "=")
		if !strings.Contains(string(flags), "      "+name+" ") {
			t.Errorf("%s is not a serve flag (docs/command-line-flags.txt)", name)
		}
	}
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]any) {
		mm := m.(map[string]any)
		mounts[mm["name"].(string)] = mm["mountPath"].(string)
	}
	vols := map[string]string{}
	volumes, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		vm := v.(map[string]any)
		if s, ok := vm["secret"].(map[string]any); ok {
			vols[vm["name"].(string)] = s["secretName"].(string)
		}
	}
	if mounts["firehose"] != "/etc/options-record/firehose" || vols["firehose"] != "firehose-key" ||
		mounts["eventhubs"] != "/etc/options-record/eventhubs" || vols["eventhubs"] != "eventhubs" {
		t.Errorf("mounts %v, secret volumes %v", mounts, vols)
	}
}
