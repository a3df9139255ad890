package cmdutil

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// CreateRestore creates a Restore (or ClusterRestore) of spec and returns
// its status, as the API answered.
func (f *Factory) CreateRestore(ctx context.Context, t *Target, spec record.RestoreSpec, dryRun bool) (*record.RestoreStatus, error) {
	rc, err := f.Record()
	if err != nil {
		return nil, err
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	meta := metav1.ObjectMeta{Name: RestoreName(t.Name)}
	if !t.Namespaced {
		got, err := rc.ClusterRestores().Create(ctx, &record.ClusterRestore{ObjectMeta: meta, Spec: spec}, opts)
		if err != nil {
			return nil, Explain(err, "create clusterrestores (restore "+t.Resource.String()+")")
		}
		return &got.Status, nil
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	meta.Namespace = ns
	got, err := rc.Restores(ns).Create(ctx, &record.Restore{ObjectMeta: meta, Spec: spec}, opts)
	if err != nil {
		return nil, Explain(err, "create restores in namespace "+ns)
	}
	return &got.Status, nil
}

// CreatePlan creates a plan (cluster-scoped, or in the namespace) and
// returns its steps, and the flags that name where it is.
func (f *Factory) CreatePlan(ctx context.Context, cluster bool, name string, spec record.RestorePlanSpec) (*record.RestorePlanStatus, string, error) {
	rc, err := f.Record()
	if err != nil {
		return nil, "", err
	}
	if cluster {
		got, err := rc.ClusterRestorePlans().Create(ctx, &record.ClusterRestorePlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return nil, "", Explain(err, "create clusterrestoreplans")
		}
		return &got.Status, " --cluster", nil
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, "", err
	}
	got, err := rc.RestorePlans(ns).Create(ctx, &record.RestorePlan{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", Explain(err, "create restoreplans in namespace "+ns)
	}
	return &got.Status, " -n " + ns, nil
}

// RestoreName names a Restore (or a plan) after the object, unique enough:
// names are each user's own. The name is a DNS-1123 label whatever the
// object's name or the user's is (a Role system:controller:foo, a
// ServiceAccount system:serviceaccount:ns:sa, an e-mail user): lower case,
// every run of other characters one dash, at most 40 of them kept, then 8
// random hex digits.
func RestoreName(object string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(object) {
		if sb.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			sb.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	prefix := strings.Trim(sb.String(), "-")
	if prefix == "" {
		prefix = "restore"
	}
	return fmt.Sprintf("%s-%x", prefix, b)
}
