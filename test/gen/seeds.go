package gen

import (
	"bufio"
	"bytes"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// EventListSeeds are real event shapes, for fuzzing the ingest decoder and
// testing what it lets through: EventLists of what this package builds for
// each kind of change the record distinguishes (all of them first, then one
// EventList of each), of the lines of demoLog (an audit log, one Event a
// line: one EventList of each line, then one of all), and odd bodies.
func EventListSeeds(demoLog []byte) [][]byte {
	cm := ConfigMap("prod", "app", "uid-1", 11, map[string]string{"LOG_LEVEL": "debug"}, Labels("app", "web"))
	secret := Secret("vault", "db", "uid-2", 12, map[string]string{"password": "hunter2"},
		Annotation("kubectl.kubernetes.io/last-applied-configuration", `{"data":{"password":"aHVudGVyMg=="}}`))
	evs := []*auditv1.Event{
		Event(Namespace("prod"), Name("app"), Response(cm)),
		Event(Verb("update"), Namespace("prod"), Name("app"), Request(cm), Response(cm)),
		Event(Verb("patch"), Namespace("prod"), Name("app"), Request([]any{Obj{"op": "replace", "path": "/data/LOG_LEVEL", "value": "info"}}), Response(cm)),
		Event(Verb("delete"), Namespace("prod"), Name("app"), Response(Status("", "configmaps", "app", "uid-1"))),
		Event(Verb("delete"), Namespace("prod"), Name("app"), Request(DeleteOptions(true)), Response(Status("", "configmaps", "app", "uid-1"))),
		Event(Verb("deletecollection"), Namespace("team-a"), User("system:kube-controller-manager"),
			Response(List("v1", "ConfigMapList", 20, ConfigMap("team-a", "f", "uid-3", 19, nil)))),
		Event(Verb("patch"), Resource("apps", "v1", "deployments"), Subresource("scale"), Namespace("prod"), Name("web"),
			Response(Scale("prod", "web", "uid-4", 13, 3))),
		Event(Verb("update"), Resource("apps", "v1", "deployments"), Namespace("prod"), Name("web"), Impersonating("dave", "devs"),
			Response(Deployment("prod", "web", "uid-4", 14, 2, Finalizers("x"), Deleting()))),
		Event(Resource("", "v1", "secrets"), Namespace("vault"), Name("db"), Response(secret)),
		Event(Verb("delete"), Resource("", "v1", "namespaces"), Namespace(""), Name("team-a"), Response(NamespaceObj("team-a", "uid-5", 15, true))),
		Event(Verb("delete"), Namespace("prod"), Name("app"), Failed(403, metav1.StatusReasonForbidden, "forbidden")),
		Event(Stage(auditv1.StageRequestReceived), Namespace("prod"), Name("app")),
		Event(Verb("get"), Namespace("prod"), Name("app"), User("system:kube-scheduler")),
	}
	seeds := [][]byte{EventList(evs...)}
	for _, ev := range evs {
		seeds = append(seeds, EventList(ev))
	}
	// The demo log: one EventList of each line, then one of all its lines.
	var items []string
	sc := bufio.NewScanner(bytes.NewReader(demoLog))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			items = append(items, line)
			seeds = append(seeds, []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`+line+`]}`))
		}
	}
	seeds = append(seeds, []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`+strings.Join(items, ",")+`]}`))
	return append(seeds,
		[]byte(``), []byte(`{}`), []byte(`null`), []byte(`[]`),
		[]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":null}`),
		[]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[null,1,"x",{},[]]}`),
		[]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1","items":[]}`),
		[]byte(`{"KIND":"EventList","apiversion":"audit.k8s.io/v1","items":[]}`),
		[]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":"a","stage":"ResponseComplete","verb":"create","stageTimestamp":"2026-11-21T10:00:00Z","objectRef":{"resource":"configmaps","namespace":"prod","name":"\u0000"},"responseObject":{"metadata":{"uid":"u","resourceVersion":"x"}}}]}`),
		[]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"a":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}]}`),
	)
}
