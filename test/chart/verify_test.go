package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	witnessKey1 = "witness.example+1a2b3c4d+BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	witnessKey2 = "witness2.example+5e6f7a8b+BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	verifierKey = "record.example.com/log+3f9a2c1b+AUlc4ZtwYl9ez4GBnH55KMHBjjj1J6ePwAtUrV7Gmphl"
)

// verifyValues turn the scheduled verify on, with a log whose checkpoints
// are in a bucket and two witnesses.
func verifyValues(verify map[string]any) map[string]any {
	v := map[string]any{"enabled": true, "serviceAccountAnnotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/checkpoints-read"}}
	for k, x := range verify {
		v[k] = x
	}
	return map[string]any{"tamperLog": map[string]any{
		"signingKeySecret": "options-record-log-signing-key",
		"checkpointURL":    "s3://cp?region=eu-west-1",
		"witnesses": []any{
			map[string]any{"url": "https://witness.example/", "key": witnessKey1},
			map[string]any{"url": "https://witness2.example/", "key": witnessKey2},
		},
		"witnessQuorum": 1,
		"verify":        v,
	}}
}

// flagsOf is the text of one command's section of
// docs/command-line-flags.txt (what its --help prints).
func flagsOf(t *testing.T, command string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "command-line-flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## options-record "+command+"\n")
	if !ok {
		t.Fatalf("docs/command-line-flags.txt has no section of %s", command)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

// checkFlags fails on an argument that is not a flag of the command.
func checkFlags(t *testing.T, command string, args []string) {
	t.Helper()
	flags := flagsOf(t, command)
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.Contains(flags, "      "+name+" ") {
			t.Errorf("%s is not a flag of options-record %s (docs/command-line-flags.txt)", name, command)
		}
	}
}

// podSpec is the pod template's spec of a workload (a CronJob's Jobs').
func podSpec(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	path := []string{"spec", "template", "spec"}
	if u.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	spec, ok, err := unstructured.NestedMap(u.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s: no pod spec: %v", key(u), err)
	}
	return spec
}

func containerArgs(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	containers, _ := podSpec(t, u)["containers"].([]any)
	if len(containers) != 1 {
		t.Fatalf("%s: %d containers", key(u), len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

// TestChartVerifyCronJob: tamperLog.verify.enabled renders a CronJob that
// runs `options-record verify` fully (no --incremental) with the log's
// public key, the trusted checkpoints in the ingest's bucket and a
// --witness-key for each witness, under a ServiceAccount of its own (the
// read-only cloud identity's annotations there, not on the ingest's), as
// the record's reader: it mounts nothing but the public key, read-only,
// and holds no write credential (not the signing key, not the ingest's
// database login, not a Kubernetes token). Each argument is a flag of
// verify.
func TestChartVerifyCronJob(t *testing.T) {
	c := loadChart(t)
	objs := renderChart(t, c, verifyValues(map[string]any{"verifierKey": verifierKey})).objects
	cj := find(objs, "CronJob", "options-record-verify")
	if cj == nil {
		t.Fatalf("tamperLog.verify.enabled rendered no CronJob options-record-verify: %v", keys(objs))
	}
	args := containerArgs(t, cj)
	want := []string{"verify", "--log-verifier-key-file=/etc/options-record/log-verifier/key",
		"--checkpoint-url=s3://cp?region=eu-west-1", "--require-trusted", "--witness-key=" + witnessKey1, "--witness-key=" + witnessKey2, "--witness-quorum=1"}
	if d := cmp.Diff(want, args); d != "" {
		t.Errorf("verify's args (-want +got):\n%s", d)
	}
	checkFlags(t, "verify", args[1:])

	spec, _, _ := unstructured.NestedMap(cj.Object, "spec")
	if spec["schedule"] != "17 3 * * *" || spec["concurrencyPolicy"] != "Forbid" {
		t.Errorf("schedule %v, concurrencyPolicy %v; want the default schedule and Forbid", spec["schedule"], spec["concurrencyPolicy"])
	}
	job, _, _ := unstructured.NestedMap(cj.Object, "spec", "jobTemplate", "spec")
	if fmt.Sprint(job["activeDeadlineSeconds"]) != "3600" || fmt.Sprint(job["backoffLimit"]) != "0" {
		t.Errorf("Job: activeDeadlineSeconds %v, backoffLimit %v; want 3600 and 0 (a failed verify fails its Job)", job["activeDeadlineSeconds"], job["backoffLimit"])
	}

	pod := podSpec(t, cj)
	if pod["serviceAccountName"] != "options-record-verify" || pod["automountServiceAccountToken"] != false || pod["restartPolicy"] != "Never" {
		t.Errorf("pod: serviceAccountName %v, automountServiceAccountToken %v, restartPolicy %v", pod["serviceAccountName"], pod["automountServiceAccountToken"], pod["restartPolicy"])
	}
	psc, _ := pod["securityContext"].(map[string]any)
	if psc["runAsNonRoot"] != true || fmt.Sprint(psc["runAsUser"]) != "65532" {
		t.Errorf("pod securityContext %v", psc)
	}
	ctr := pod["containers"].([]any)[0].(map[string]any)
	csc, _ := ctr["securityContext"].(map[string]any)
	if csc["readOnlyRootFilesystem"] != true || csc["allowPrivilegeEscalation"] != false || !cmp.Equal(csc["capabilities"], map[string]any{"drop": []any{"ALL"}}) {
		t.Errorf("container securityContext %v", csc)
	}
	if lim, _, _ := unstructured.NestedString(ctr, "resources", "limits", "memory"); lim == "" {
		t.Errorf("no memory limit: %v", ctr["resources"])
	}

	// The database login: the reader's URL, and nothing else from a Secret.
	var secretEnv []string
	for _, e := range ctr["env"].([]any) {
		em := e.(map[string]any)
		if ref, ok, _ := unstructured.NestedMap(em, "valueFrom", "secretKeyRef"); ok {
			secretEnv = append(secretEnv, em["name"].(string)+"="+ref["name"].(string)+"/"+ref["key"].(string))
		}
	}
	if d := cmp.Diff([]string{"OPTIONS_RECORD_DATABASE_URL=options-record-database-api/reader-url"}, secretEnv); d != "" {
		t.Errorf("env from Secrets (-want +got):\n%s", d)
	}
	// Mounted: the public key, read-only; a scratch /tmp. No Secret.
	mounts := map[string]bool{}
	for _, m := range ctr["volumeMounts"].([]any) {
		mm := m.(map[string]any)
		mounts[mm["name"].(string)] = mm["readOnly"] == true
		if mm["name"] != "tmp" && mm["readOnly"] != true {
			t.Errorf("%s mounted writable", mm["name"])
		}
	}
	if !mounts["log-verifier"] {
		t.Errorf("the verifier key is not mounted read-only: %v", mounts)
	}
	var sources []string
	for _, v := range pod["volumes"].([]any) {
		vm := v.(map[string]any)
		for _, kind := range []string{"secret", "configMap", "persistentVolumeClaim", "projected", "hostPath"} {
			if src, ok := vm[kind].(map[string]any); ok {
				name, _ := src["secretName"].(string)
				if name == "" {
					name, _ = src["name"].(string)
				}
				sources = append(sources, kind+"/"+name)
			}
		}
	}
	if d := cmp.Diff([]string{"configMap/options-record-log-verifier"}, sources); d != "" {
		t.Errorf("volumes (-want +got):\n%s", d)
	}

	// The read-only identity goes on the verify ServiceAccount; the
	// ingest's keeps its own (none here).
	sa := find(objs, "ServiceAccount", "options-record-verify")
	if sa == nil || sa.GetAnnotations()["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/checkpoints-read" {
		t.Errorf("ServiceAccount options-record-verify: %v", sa)
	} else if v, _, _ := unstructured.NestedBool(sa.Object, "automountServiceAccountToken"); v {
		t.Error("ServiceAccount options-record-verify mounts a token")
	}
	if ingest := find(objs, "ServiceAccount", "options-record"); ingest == nil || len(ingest.GetAnnotations()) != 0 {
		t.Errorf("the ingest's ServiceAccount got the verify identity's annotations: %v", ingest)
	}
}

// TestChartVerifyKeySources: the public key comes from the value (a
// ConfigMap the chart makes), a ConfigMap or a Secret of the operator's;
// the database login from another Secret when asked; the verify pods get
// their extra labels; with the demo PostgreSQL, its NetworkPolicy admits
// them.
func TestChartVerifyKeySources(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		verify map[string]any
		source string
		made   bool
	}{
		{map[string]any{"verifierKey": verifierKey}, "configMap/options-record-log-verifier", true},
		{map[string]any{"verifierKeyConfigMap": "log-pub"}, "configMap/log-pub", false},
		{map[string]any{"verifierKeySecret": "log-pub", "database": map[string]any{"secretName": "auditor-db", "key": "url"},
			"podLabels": map[string]any{"azure.workload.identity/use": "true"}}, "secret/log-pub", false},
	} {
		objs := renderChart(t, c, verifyValues(tc.verify)).objects
		cj := find(objs, "CronJob", "options-record-verify")
		if cj == nil {
			t.Fatalf("%v: no CronJob", tc.verify)
		}
		pod := podSpec(t, cj)
		vm := pod["volumes"].([]any)[0].(map[string]any)
		var got string
		if s, ok := vm["secret"].(map[string]any); ok {
			got = "secret/" + s["secretName"].(string)
		} else if s, ok := vm["configMap"].(map[string]any); ok {
			got = "configMap/" + s["name"].(string)
		}
		if vm["name"] != "log-verifier" || got != tc.source {
			t.Errorf("%v: the key's volume %v, want %s", tc.verify, vm, tc.source)
		}
		cm := find(objs, "ConfigMap", "options-record-log-verifier")
		if (cm != nil) != tc.made {
			t.Errorf("%v: ConfigMap options-record-log-verifier rendered %v, want %v", tc.verify, cm != nil, tc.made)
		}
		if cm != nil {
			if k, _, _ := unstructured.NestedString(cm.Object, "data", "key"); k != verifierKey {
				t.Errorf("the ConfigMap's key %q, want %q", k, verifierKey)
			}
		}
		if db, ok := tc.verify["database"]; ok {
			ctr := pod["containers"].([]any)[0].(map[string]any)
			ref, _, _ := unstructured.NestedMap(ctr["env"].([]any)[0].(map[string]any), "valueFrom", "secretKeyRef")
			if !cmp.Equal(ref, map[string]any{"name": db.(map[string]any)["secretName"], "key": db.(map[string]any)["key"]}) {
				t.Errorf("database Secret %v, want %v", ref, db)
			}
		}
		labels, _, _ := unstructured.NestedStringMap(cj.Object, "spec", "jobTemplate", "spec", "template", "metadata", "labels")
		if pl, ok := tc.verify["podLabels"]; ok && labels["azure.workload.identity/use"] != pl.(map[string]any)["azure.workload.identity/use"] {
			t.Errorf("pod labels %v lack %v", labels, pl)
		}
		if labels["app.kubernetes.io/component"] != "verify" {
			t.Errorf("pod labels %v", labels)
		}
	}

	vals := verifyValues(map[string]any{"verifierKey": verifierKey})
	vals["postgres"] = map[string]any{"enabled": true}
	np := find(renderChart(t, c, vals).objects, "NetworkPolicy", "options-record-postgres")
	if np == nil {
		t.Fatal("no NetworkPolicy options-record-postgres")
	}
	from, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	exprs, _, _ := unstructured.NestedSlice(from[0].(map[string]any)["from"].([]any)[0].(map[string]any), "podSelector", "matchExpressions")
	var components []any
	for _, e := range exprs {
		if e.(map[string]any)["key"] == "app.kubernetes.io/component" {
			components = e.(map[string]any)["values"].([]any)
		}
	}
	if !slices.Contains(components, any("verify")) {
		t.Errorf("the demo PostgreSQL admits %v, not the verify pods", components)
	}
}

// TestChartIngestLogFlags: the tamperLog and notifications values give
// the ingest's serve the flags of the periodic verify, the witnesses and
// the notifications' lease, each a flag of serve, and the ingest pods
// their extra labels; the default values give none of them, and render no
// verify CronJob, ServiceAccount or ConfigMap.
func TestChartIngestLogFlags(t *testing.T) {
	c := loadChart(t)
	sts := func(vals map[string]any) (*unstructured.Unstructured, []*unstructured.Unstructured) {
		t.Helper()
		objs := renderChart(t, c, vals).objects
		s := find(objs, "StatefulSet", "options-record")
		if s == nil {
			t.Fatal("no ingest StatefulSet")
		}
		return s, objs
	}
	flagged := func(args []string) []string {
		var out []string
		for _, a := range args {
			for _, p := range []string{"--verify-interval", "--witness", "--notify-lease"} {
				if strings.HasPrefix(a, p) {
					out = append(out, a)
					break
				}
			}
		}
		return out
	}
	s, objs := sts(nil)
	if got := flagged(containerArgs(t, s)); len(got) > 0 {
		t.Errorf("the default values pass %q", got)
	}
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/component"] == "verify" || o.GetKind() == "CronJob" {
			t.Errorf("the default values render %s", key(o))
		}
	}

	vals := verifyValues(map[string]any{"verifierKey": verifierKey})
	vals["tamperLog"].(map[string]any)["verifyInterval"] = "10m"
	vals["tamperLog"].(map[string]any)["witnessInterval"] = "30s"
	vals["notifications"] = map[string]any{"secretName": "notify", "lease": "2m"}
	vals["ingest"] = map[string]any{"podLabels": map[string]any{"azure.workload.identity/use": "true"}}
	s, _ = sts(vals)
	args := containerArgs(t, s)
	want := []string{"--notify-lease=2m", "--verify-interval=10m",
		"--witness=https://witness.example/=" + witnessKey1, "--witness=https://witness2.example/=" + witnessKey2,
		"--witness-quorum=1", "--witness-interval=30s"}
	if d := cmp.Diff(want, flagged(args)); d != "" {
		t.Errorf("the ingest's flags (-want +got):\n%s", d)
	}
	checkFlags(t, "serve", flagged(args))
	labels, _, _ := unstructured.NestedStringMap(s.Object, "spec", "template", "metadata", "labels")
	if labels["azure.workload.identity/use"] != "true" || labels["app.kubernetes.io/component"] != "sink" {
		t.Errorf("ingest pod labels %v", labels)
	}
	sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector", "matchLabels")
	if len(sel) != 2 {
		t.Errorf("ingest.podLabels changed the selector: %v", sel)
	}
}

// TestChartRefusesBrokenLogValues: values of the log that cannot work fail
// the render with a message saying why.
func TestChartRefusesBrokenLogValues(t *testing.T) {
	c := loadChart(t)
	noBucket := verifyValues(map[string]any{"verifierKey": verifierKey})
	delete(noBucket["tamperLog"].(map[string]any), "checkpointURL")
	noLog := verifyValues(map[string]any{"verifierKey": verifierKey})
	delete(noLog["tamperLog"].(map[string]any), "signingKeySecret")
	quorum := verifyValues(map[string]any{"verifierKey": verifierKey})
	quorum["tamperLog"].(map[string]any)["witnessQuorum"] = 3
	for _, tc := range []struct {
		values map[string]any
		says   string
	}{
		{noBucket, "a Job cannot read those on the ingest pods' data volumes"},
		{verifyValues(nil), "one of verifierKey, verifierKeyConfigMap and verifierKeySecret"},
		{verifyValues(map[string]any{"verifierKey": verifierKey, "verifierKeySecret": "log-pub"}), "one of verifierKey"},
		{noLog, "need tamperLog.signingKeySecret"},
		{quorum, "tamperLog.witnessQuorum 3: want 0 (all) to 2"},
		{map[string]any{"notifications": map[string]any{"lease": "2m"}}, "notifications.lease needs notifications.secretName"},
	} {
		install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
		install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, releaseName, namespace
		_, err := install.Run(c, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("values %v: got error %v, want one saying %q", tc.values, err, tc.says)
		}
	}
}
