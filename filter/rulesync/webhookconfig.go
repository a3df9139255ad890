package rulesync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/filter"
)

// syncWebhookConfig makes the observing webhook of the
// ValidatingWebhookConfiguration Options.WebhookConfigName select what the
// rules select now (filter.AdmissionWebhook), with one GET and, only when
// it differs, one UPDATE: no watch, and RBAC on that one object
// (resourceNames: get, update). The object and its webhook are created by
// the install manifests; the sink keeps what they say of how the apiserver
// reaches it (clientConfig, with the caBundle cert-manager injects) and of
// its timeout, and rewrites the rest. It runs on the replica that writes
// statuses, once the first LIST has given the cluster's rules: before it,
// the rules would be the static ones only and the webhook would lose what
// the cluster's rules select.
func (s *Syncer) syncWebhookConfig(ctx context.Context) error {
	name := s.opts.WebhookConfigName
	if name == "" || !s.started.Load() {
		return nil
	}
	s.webhookSyncs.Add(1)
	objs, copts := s.opts.Registry.compileInput(s.opts.Cluster)
	want := filter.AdmissionWebhook(objs, filter.WebhookOptions{Options: copts, ConfigName: name}).Webhooks[0]
	client := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cur, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("ValidatingWebhookConfiguration %s not found: the install manifests create it (deploy/components/admission-observer)", name)
	}
	if err != nil {
		return fmt.Errorf("get ValidatingWebhookConfiguration %s: %w", name, err)
	}
	i := -1
	for j := range cur.Webhooks {
		if cur.Webhooks[j].Name == filter.WebhookName {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook %s: the install manifests create it", name, filter.WebhookName)
	}
	have := cur.Webhooks[i]
	want.ClientConfig = have.ClientConfig
	if have.TimeoutSeconds != nil {
		want.TimeoutSeconds = have.TimeoutSeconds
	}
	// What others add to the namespace selector stays (AKS's Admissions
	// Enforcer adds expressions keeping webhooks out of its control-plane
	// namespaces): the sink owns only the namespace-name expression, and
	// would otherwise rewrite the object after every one of theirs.
	if sel := have.NamespaceSelector; sel != nil {
		for _, e := range sel.MatchExpressions {
			if e.Key != corev1.LabelMetadataName {
				want.NamespaceSelector.MatchExpressions = append(want.NamespaceSelector.MatchExpressions, e)
			}
		}
		want.NamespaceSelector.MatchLabels = sel.MatchLabels
	}
	if apiequality.Semantic.DeepEqual(have, want) {
		return nil
	}
	next := cur.DeepCopy()
	next.Webhooks[i] = want
	if _, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: "options-record"}); err != nil {
		// A conflict (someone else wrote it since the GET) is retried at
		// the next sync, with a fresh GET.
		return fmt.Errorf("update ValidatingWebhookConfiguration %s: %w", name, err)
	}
	s.webhookUpdates.Add(1)
	s.log.Info("observing webhook now follows the rules", "configuration", name, "rules", len(want.Rules))
	return nil
}
