package record

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestTablesFit120Columns prints a typical row of kubectl get deletions
// kubectl get changes and kubectl get attempts (-A too) with kubectl's own table printer: each
// line fits 120 columns, leads with the object and shows the short name;
// -o wide keeps the long name.
func TestTablesFit120Columns(t *testing.T) {
	t.Parallel()
	long := "5e0c9f1a-7d4b-4c6f-8e21-aa04c0ffee00." + strings.Repeat("3f9a2c1b", 8)
	at := metav1.NewMicroTime(time.Now().Add(-2 * time.Minute))
	obj := recordv1alpha1.ObjectReference{Resource: "configmaps", Name: "app-config", Namespace: "shop", UID: "5e0c9f1a-7d4b-4c6f-8e21-aa04c0ffee00"}
	actor := recordv1alpha1.Actor{Username: "alice@example.com", AuditID: "0b5d6c2e-1f3a-4e8b-9c7d-2a1b3c4d5e6f"}
	meta := metav1.ObjectMeta{Name: long, Namespace: "shop"}
	attemptLong := "1795428000123456." + strings.Repeat("3f9a2c1b", 8)
	for _, tt := range []struct {
		name  string
		table func() (*metav1.Table, error)
	}{
		{"deletions", func() (*metav1.Table, error) {
			d := &recordv1alpha1.Deletion{ObjectMeta: meta, DeletionRecord: recordv1alpha1.DeletionRecord{Object: obj, DeletedAt: at, Verb: "delete", Actor: actor,
				StateVersion: long}}
			return (&deletionStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.DeletionList{Items: []recordv1alpha1.Deletion{*d}}, nil)
		}},
		{"deletions by the garbage collector", func() (*metav1.Table, error) {
			gc := recordv1alpha1.Actor{Username: "system:serviceaccount:kube-system:generic-garbage-collector", AuditID: actor.AuditID}
			d := &recordv1alpha1.Deletion{ObjectMeta: meta, DeletionRecord: recordv1alpha1.DeletionRecord{Object: obj, DeletedAt: at, Verb: "delete", Actor: gc,
				StateVersion: long, InitiatedBy: "alice@example.com", InitiatedVia: "owner-deletion"}}
			return (&deletionStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.DeletionList{Items: []recordv1alpha1.Deletion{*d}}, nil)
		}},
		{"changes", func() (*metav1.Table, error) {
			c := &recordv1alpha1.Change{ObjectMeta: meta, ChangeRecord: recordv1alpha1.ChangeRecord{Object: obj, ChangedAt: at, Verb: "update", Actor: &actor}}
			return (&changeStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.ChangeList{Items: []recordv1alpha1.Change{*c}}, nil)
		}},
		{"changes by the garbage collector", func() (*metav1.Table, error) {
			gc := recordv1alpha1.Actor{Username: "system:serviceaccount:kube-system:generic-garbage-collector", AuditID: actor.AuditID}
			c := &recordv1alpha1.Change{ObjectMeta: meta, ChangeRecord: recordv1alpha1.ChangeRecord{Object: obj, ChangedAt: at, Verb: "delete", Actor: &gc,
				InitiatedBy: "alice@example.com", InitiatedVia: "owner-deletion"}}
			return (&changeStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.ChangeList{Items: []recordv1alpha1.Change{*c}}, nil)
		}},
		{"attempts", func() (*metav1.Table, error) {
			a := &recordv1alpha1.Attempt{ObjectMeta: metav1.ObjectMeta{Name: attemptLong, Namespace: "shop"}, AttemptRecord: recordv1alpha1.AttemptRecord{
				Object: obj, AttemptedAt: at, Verb: "delete", Actor: actor,
				Result: recordv1alpha1.AttemptResult{Code: 403, Reason: "Forbidden", Message: `configmaps "app-config" is forbidden: User "alice@example.com" cannot delete resource "configmaps" in API group "" in the namespace "shop"`}}}
			return (&attemptStorage{}).ConvertToTable(context.Background(), &recordv1alpha1.AttemptList{Items: []recordv1alpha1.Attempt{*a}}, nil)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, o := range []printers.PrintOptions{{}, {WithNamespace: true}, {Wide: true, WithNamespace: true}} {
				table, err := tt.table()
				if err != nil {
					t.Fatal(err)
				}
				for i := range table.Rows {
					table.Rows[i].Object = runtime.RawExtension{Object: &metav1.PartialObjectMetadata{ObjectMeta: meta}}
				}
				var out bytes.Buffer
				if err := printers.NewTablePrinter(o).PrintObj(table, &out); err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
				if len(lines) != 2 {
					t.Fatalf("%+v: %q", o, out.String())
				}
				first := strings.Fields(lines[1])
				if o.WithNamespace {
					first = first[1:]
				}
				if first[0] != "configmaps" || first[1] != "app-config" {
					t.Errorf("%+v: the row does not lead with the object:\n%s", o, out.String())
				}
				if !strings.Contains(lines[1], " app-config-3f9a2c1b") {
					t.Errorf("%+v: no short name:\n%s", o, out.String())
				}
				if o.Wide {
					if strings.Contains(tt.name, "garbage") && !strings.Contains(lines[1], " system:serviceaccount:kube-system:generic-garbage-collector") {
						t.Errorf("-o wide has no full deleter:\n%s", out.String())
					}
					if !strings.Contains(lines[1], long) && !strings.Contains(lines[1], attemptLong) {
						t.Errorf("-o wide has no long name:\n%s", out.String())
					}
					continue
				}
				for _, l := range lines {
					if n := len([]rune(l)); n > 120 {
						t.Errorf("%+v: a line of %d columns, want at most 120:\n%s", o, n, out.String())
					}
				}
				t.Logf("%+v:\n%s", o, out.String())
			}
		})
	}
}
