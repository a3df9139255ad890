package model_test

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// BenchmarkConvert measures what a kept event costs the model: the shapes
// of the benchmark's all-kept mix (make bench), with states of about the
// size it writes (~3.8 KB), and the two events whose request body is kept.
// The objects carry no managedFields, as with the audit policy the sink
// ships (omitManagedFields): cutting them would rewrite the event's bytes
// in place, and each iteration would see the bytes the last one left.
//
//	go test ./store/model -run '^$' -bench Convert -benchmem
func BenchmarkConvert(b *testing.B) {
	data := map[string]string{}
	for i := range 24 {
		data["key-"+strconv.Itoa(i)] = strings.Repeat("v", 120)
	}
	noMF := func(o Obj) { delete(o["metadata"].(Obj), "managedFields") }
	cm := ConfigMap("prod", "app", "uid-1", 11, data, noMF, Labels("app", "web", "tier", "frontend"),
		Annotation("kubectl.kubernetes.io/last-applied-configuration", `{"data":{"k":"v"}}`))
	items := make([]Obj, 0, 20)
	for i := range 20 {
		items = append(items, ConfigMap("team-a", "cm-"+strconv.Itoa(i), "uid-i"+strconv.Itoa(i), int64(20+i), map[string]string{"k": "v"}, noMF))
	}
	for _, bc := range []struct {
		name string
		ev   *auditv1.Event
	}{
		{"create", Event(Namespace("prod"), Name("app"), Response(cm))},
		{"update", Event(Verb("update"), Namespace("prod"), Name("app"), Request(cm), Response(cm))},
		{"patch", Event(Verb("patch"), Namespace("prod"), Name("app"),
			Request(Obj{"data": Obj{"key-1": strings.Repeat("w", 120)}}), Response(cm))},
		{"delete", Event(Verb("delete"), Namespace("prod"), Name("app"), Request(DeleteOptions(false)),
			Response(Status("", "configmaps", "app", "uid-1")))},
		{"failed", Event(Verb("update"), Namespace("prod"), Name("app"), Request(cm),
			Failed(409, metav1.StatusReasonConflict, "the object has been modified"))},
		{"deletecollection", Event(Verb("deletecollection"), Namespace("team-a"), Name(""),
			Response(List("v1", "ConfigMapList", 40, items...)))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := model.Convert("c", bc.ev, model.Selection{Rules: []string{"r"}}, nil)
				if err != nil || len(c.Skips) > 0 || len(c.Versions) == 0 && bc.name != "failed" {
					b.Fatalf("%d versions, skipped %v, error %v", len(c.Versions), c.Skips, err)
				}
			}
		})
	}
}
