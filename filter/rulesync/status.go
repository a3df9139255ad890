package rulesync

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
)

// leaseName is the Lease that elects the replica writing statuses.
const leaseName = "options-record-status"

// leadStatus takes part in the election for the status Lease and, while
// leading, writes statuses. The Lease is read and updated with plain GET and
// UPDATE requests: no watch.
func (s *Syncer) leadStatus(ctx context.Context) {
	id := s.opts.Identity
	if id == "" {
		id, _ = os.Hostname()
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.opts.Namespace, Name: leaseName},
		Client:     s.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   30 * time.Second,
			RenewDeadline:   20 * time.Second,
			RetryPeriod:     5 * time.Second,
			ReleaseOnCancel: true,
			Name:            leaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: s.writeStatuses,
				OnStoppedLeading: func() { s.log.Info("no longer writing statuses") },
			},
		})
		if err != nil {
			s.log.Error("status election", "err", err)
			return
		}
		le.Run(ctx)
	}
}

// writeStatuses writes, while leading, the status of every object whose
// desired status changed, at most every StatusInterval, and right away when
// the objects change.
func (s *Syncer) writeStatuses(ctx context.Context) {
	s.log.Info("writing OptionsRecordController statuses", "lease", s.opts.Namespace+"/"+leaseName)
	s.mu.Lock()
	s.written = map[string]string{}
	s.mu.Unlock()
	t := time.NewTicker(s.opts.StatusInterval)
	defer t.Stop()
	for {
		s.syncStatuses(ctx)
		if err := s.syncWebhookConfig(ctx); err != nil {
			s.log.Warn("observing webhook configuration not kept current", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wakeup:
			// Let a burst of changes settle, without exceeding the rate.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (s *Syncer) syncStatuses(ctx context.Context) {
	stats, err := s.opts.Store.RuleStats(ctx, s.opts.Cluster)
	if err != nil {
		s.log.Warn("status: rule statistics unavailable", "err", err)
	}
	byName := map[string]filter.RuleStatus{}
	for _, st := range s.opts.Registry.Statuses(s.opts.Cluster) {
		byName[st.Namespace+"/"+st.Name] = st
	}
	for _, o := range s.opts.Registry.Objects(s.opts.Cluster) {
		key := o.Namespace + "/" + o.Name
		rs, ok := byName[key]
		if !ok {
			continue
		}
		want := desiredStatus(o.Status, rs, stats[key])
		fp := fingerprint(want)
		s.mu.Lock()
		same := s.written[key] == fp
		s.mu.Unlock()
		if same || fingerprint(o.Status) == fp {
			continue
		}
		if err := s.putStatus(ctx, o, want); err != nil {
			s.log.Warn("status not written", "namespace", o.Namespace, "name", o.Name, "err", err)
			continue
		}
		s.mu.Lock()
		s.written[key] = fp
		s.mu.Unlock()
	}
}

func desiredStatus(cur v1alpha1.OptionsRecordControllerStatus, rs filter.RuleStatus, st store.RuleStat) v1alpha1.OptionsRecordControllerStatus {
	out := *cur.DeepCopy()
	out.ObservedGeneration = rs.Generation
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: rs.Reason,
		Message: rs.Message, ObservedGeneration: rs.Generation}
	if rs.Ready {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&out.Conditions, cond)
	if rs.Ready && len(rs.Capped) > 0 {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: v1alpha1.ConditionCapped, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonOperatorCeiling, Message: strings.Join(rs.Capped, "; "), ObservedGeneration: rs.Generation})
	} else {
		meta.RemoveStatusCondition(&out.Conditions, v1alpha1.ConditionCapped)
	}
	if st.Events > 0 {
		out.RecordedEvents = st.Events
		t := metav1.NewTime(st.Last.UTC().Truncate(time.Second))
		out.LastRecordedTime = &t
	}
	return out
}

// fingerprint identifies a status without the transition times.
func fingerprint(st v1alpha1.OptionsRecordControllerStatus) string {
	cond := ""
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionCapped} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
			cond += fmt.Sprintf("%s/%s/%s/%s/%d;", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration)
		}
	}
	last := ""
	if st.LastRecordedTime != nil {
		last = st.LastRecordedTime.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%d|%s|%d|%s", st.ObservedGeneration, cond, st.RecordedEvents, last)
}

// putStatus writes status through the status subresource, re-reading the
// object once on a conflict.
func (s *Syncer) putStatus(ctx context.Context, o v1alpha1.OptionsRecordController, st v1alpha1.OptionsRecordControllerStatus) error {
	res := s.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(o.Namespace)
	for attempt := 0; attempt < 2; attempt++ {
		o.Status = st
		o.APIVersion, o.Kind = v1alpha1.GroupVersion.String(), v1alpha1.Kind
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o)
		if err != nil {
			return err
		}
		_, err = res.UpdateStatus(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{FieldManager: "options-record"})
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		fresh, gerr := res.Get(ctx, o.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		var fo v1alpha1.OptionsRecordController
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(fresh.Object, &fo); err != nil {
			return err
		}
		if fo.UID != o.UID {
			return nil // replaced by another object of the same name
		}
		o = fo
	}
	return fmt.Errorf("status of %s/%s: conflict", o.Namespace, o.Name)
}
