package rulesync

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
)

// Registry is the per-cluster set of OptionsRecordController objects and the
// rules compiled from them. It is safe for concurrent use.
type Registry struct {
	opts   RegistryOptions
	static []v1alpha1.OptionsRecordController

	mu       sync.Mutex
	clusters map[string]*clusterObjects
	// compiled maps a cluster to its rules; replaced as a whole on change.
	compiled atomic.Pointer[map[string]*compiled]
	staticR  *compiled
	onChange []func(cluster string)
	// onObserved receives what ObserveEvents changed, to share it with the
	// other replicas (see Sharer).
	onObserved func(objs []store.RuleObject)
}

type compiled struct {
	rules    *filter.Rules
	statuses []filter.RuleStatus
	objects  []v1alpha1.OptionsRecordController
}

// clusterObjects are the objects known for one cluster, by uid.
type clusterObjects struct {
	objs map[types.UID]known
	// gone remembers deleted uids so an older event arriving late does not
	// bring an object back.
	gone map[types.UID]bool
	// listRV is the resourceVersion of the newest LIST applied: a shared
	// copy at most as new of an object that LIST did not return was
	// deleted since (ApplyShared).
	listRV int64
}

type known struct {
	obj v1alpha1.OptionsRecordController
	rv  int64
}

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Compile are the options the rules compile with. Its
	// TrustedNamespaces are set per cluster, from HomeCluster and
	// TrustedNamespaces.
	Compile filter.Options
	// HomeCluster is the cluster the sink runs in (--cluster): by default
	// its objects in the sink's namespace (Compile.SinkNamespace) are
	// trusted rules, which may select any namespace.
	HomeCluster string
	// TrustedNamespaces are, by cluster, the namespaces whose objects are
	// trusted rules there; a cluster listed here (even with no namespace)
	// trusts exactly these. A cluster not listed other than HomeCluster
	// trusts none: whoever may create the sink's namespace on a cluster of
	// the fleet must not get cluster-wide rules there.
	TrustedNamespaces map[string][]string
}

// compileOptions are the compile options of a cluster's rules.
func (o RegistryOptions) compileOptions(cluster string) filter.Options {
	c := o.Compile
	switch nss, ok := o.TrustedNamespaces[cluster]; {
	case ok:
		c.TrustedNamespaces = append([]string{}, nss...)
	case cluster == o.HomeCluster:
		c.TrustedNamespaces = nil // the sink's namespace
	default:
		c.TrustedNamespaces = []string{}
	}
	return c
}

// NewRegistry starts with the static rules (from --rules-file), which apply
// to every cluster and are trusted there: an object of them without a
// namespace, or in the sink's namespace, may select any namespace.
func NewRegistry(static []v1alpha1.OptionsRecordController, opts RegistryOptions) *Registry {
	sinkNS := opts.Compile.SinkNamespace
	if sinkNS == "" {
		sinkNS = filter.DefaultSinkNamespace
	}
	// The operator's objects in the sink's namespace are the operator's
	// wherever they apply: filter trusts objects without a namespace.
	static = append([]v1alpha1.OptionsRecordController(nil), static...)
	for i := range static {
		if static[i].Namespace == sinkNS {
			static[i].Namespace = ""
		}
	}
	r := &Registry{opts: opts, static: static, clusters: map[string]*clusterObjects{}}
	rules, st := filter.Compile(static, opts.compileOptions(opts.HomeCluster))
	r.staticR = &compiled{rules: rules, statuses: st, objects: static}
	empty := map[string]*compiled{}
	r.compiled.Store(&empty)
	return r
}

// OnChange registers fn to be called (outside the lock) with a cluster whose
// objects changed.
func (r *Registry) OnChange(fn func(cluster string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onChange = append(r.onChange, fn)
}

// RulesFor returns the rules in force for a cluster's events.
func (r *Registry) RulesFor(cluster string) *filter.Rules {
	if c, ok := (*r.compiled.Load())[cluster]; ok {
		return c.rules
	}
	return r.staticR.rules
}

// MaxRetention is the longest retention of the rules in force for any
// cluster (0 when no rule is): the record is shared, so what one cluster's
// rules keep is kept.
func (r *Registry) MaxRetention() time.Duration {
	m := r.staticR.rules.MaxRetention()
	for _, c := range *r.compiled.Load() {
		m = max(m, c.rules.MaxRetention())
	}
	return m
}

// Statuses returns the compile outcome of each object of a cluster (static
// rules included).
func (r *Registry) Statuses(cluster string) []filter.RuleStatus {
	if c, ok := (*r.compiled.Load())[cluster]; ok {
		return c.statuses
	}
	return r.staticR.statuses
}

// compileInput returns the objects a cluster's rules are compiled from
// (static rules included) and the options they compile with.
func (r *Registry) compileInput(cluster string) ([]v1alpha1.OptionsRecordController, filter.Options) {
	if c, ok := (*r.compiled.Load())[cluster]; ok {
		return c.objects, r.opts.compileOptions(cluster)
	}
	return r.staticR.objects, r.opts.compileOptions(r.opts.HomeCluster)
}

// Objects returns the cluster's OptionsRecordController objects as known now
// (not the static ones).
func (r *Registry) Objects(cluster string) []v1alpha1.OptionsRecordController {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clusters[cluster]
	if c == nil {
		return nil
	}
	return c.sorted()
}

func (c *clusterObjects) sorted() []v1alpha1.OptionsRecordController {
	out := make([]v1alpha1.OptionsRecordController, 0, len(c.objs))
	for _, k := range c.objs {
		out = append(out, k.obj)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (r *Registry) cluster(name string) *clusterObjects {
	c := r.clusters[name]
	if c == nil {
		c = &clusterObjects{objs: map[types.UID]known{}, gone: map[types.UID]bool{}}
		r.clusters[name] = c
	}
	return c
}

// Replace makes a LIST the truth for a cluster: objects it returns are
// upserted unless a newer copy is known (an audit event newer than the
// LIST), objects it does not return are removed unless they are newer than
// the LIST (created after it).
func (r *Registry) Replace(cluster string, objs []v1alpha1.OptionsRecordController, listRV int64) {
	r.mu.Lock()
	c := r.cluster(cluster)
	before := c.snapshot()
	seen := map[types.UID]bool{}
	changed := false
	for _, o := range objs {
		seen[o.UID] = true
		changed = c.upsert(o) || changed
	}
	for uid, k := range c.objs {
		if !seen[uid] && (listRV == 0 || k.rv <= listRV) {
			delete(c.objs, uid)
			c.gone[uid] = true
			changed = true
		}
	}
	c.listRV = max(c.listRV, listRV)
	fns := r.recompile(cluster, changed)
	// What the LIST changed is shared too: the other replicas learn a
	// deletion they missed, and the cluster's rules are in the database.
	observed := c.diff(cluster, before)
	share := r.onObserved
	r.mu.Unlock()
	if share != nil && len(observed) > 0 {
		share(observed)
	}
	for _, fn := range fns {
		fn(cluster)
	}
}

// upsert stores o unless the known copy is at least as new. It reports
// whether anything changed.
func (c *clusterObjects) upsert(o v1alpha1.OptionsRecordController) bool {
	if c.gone[o.UID] {
		return false
	}
	rv, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
	if k, ok := c.objs[o.UID]; ok && k.rv >= rv {
		return false
	}
	// One name is one object at a time: of two uids under a name, the
	// older (resourceVersions are etcd's revisions, ordered across
	// objects) was deleted without its delete being seen.
	for u, k := range c.objs {
		if u == o.UID || k.obj.Namespace != o.Namespace || k.obj.Name != o.Name {
			continue
		}
		if k.rv > rv {
			c.remove(o.UID, o.Namespace, o.Name)
			return false
		}
		c.remove(u, k.obj.Namespace, k.obj.Name)
	}
	c.objs[o.UID] = known{obj: o, rv: rv}
	return true
}

func (c *clusterObjects) remove(uid types.UID, namespace, name string) bool {
	if uid == "" {
		for u, k := range c.objs {
			if k.obj.Namespace == namespace && k.obj.Name == name {
				uid = u
			}
		}
		if uid == "" {
			return false
		}
	}
	// uid may point into an audit event's request body, which the webhook
	// reuses once the batch is stored: the set keeps a copy.
	c.gone[types.UID(strings.Clone(string(uid)))] = true
	if _, ok := c.objs[uid]; ok {
		delete(c.objs, uid)
		return true
	}
	return false
}

// recompile rebuilds the cluster's rules when changed (or when the cluster
// has none yet) and returns the change callbacks to run. Called with r.mu held.
func (r *Registry) recompile(cluster string, changed bool) []func(string) {
	cur := *r.compiled.Load()
	if _, ok := cur[cluster]; ok && !changed {
		return nil
	}
	objs := append([]v1alpha1.OptionsRecordController(nil), r.static...)
	for _, o := range r.clusters[cluster].sorted() {
		// OptionsRecordControllers are namespaced: an object without a
		// namespace cannot come from a cluster, and would be trusted.
		if o.Namespace != "" {
			objs = append(objs, o)
		}
	}
	rules, st := filter.Compile(objs, r.opts.compileOptions(cluster))
	next := make(map[string]*compiled, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[cluster] = &compiled{rules: rules, statuses: st, objects: objs}
	r.compiled.Store(&next)
	return append([]func(string){}, r.onChange...)
}

// ObserveEvents applies the successful, non-dry-run audit events about
// OptionsRecordControllers in evs: their responseObject is the object as
// written; a delete removes it. It returns whether the rules changed.
func (r *Registry) ObserveEvents(cluster string, evs []auditv1.Event) bool {
	// The pipeline asks for every event: most are no rule's, and take no lock.
	found := false
	for i := range evs {
		if isControllerEvent(&evs[i]) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	var changed, any bool
	var observed []store.RuleObject
	r.mu.Lock()
	for i := range evs {
		ev := &evs[i]
		if !isControllerEvent(ev) {
			continue
		}
		any = true
		c := r.cluster(cluster)
		before := c.snapshot()
		// A delete of an object this replica never held changes no rule
		// here but is news to the others: share what the event did, not
		// only what it changed.
		changed = r.apply(c, ev) || changed
		observed = append(observed, c.diff(cluster, before)...)
	}
	var fns []func(string)
	if any {
		fns = r.recompile(cluster, changed)
	}
	share := r.onObserved
	r.mu.Unlock()
	if share != nil && len(observed) > 0 {
		share(observed)
	}
	for _, fn := range fns {
		fn(cluster)
	}
	return changed
}

// OnObserved registers fn to receive the rule objects that audit events
// changed (upserted, or deleted), outside the lock. One function: the
// Sharer's.
func (r *Registry) OnObserved(fn func(objs []store.RuleObject)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onObserved = fn
}

// ApplyShared applies rule objects other replicas observed (newer copies
// win, deletions are final), as audit events would have been.
func (r *Registry) ApplyShared(objs []store.RuleObject) {
	changed := map[string]bool{}
	r.mu.Lock()
	for _, so := range objs {
		c := r.cluster(so.Cluster)
		if so.Deleted {
			if c.remove(types.UID(so.UID), "", "") {
				changed[so.Cluster] = true
			}
			continue
		}
		var o v1alpha1.OptionsRecordController
		if json.Unmarshal(so.Object, &o) != nil || o.UID != types.UID(so.UID) {
			continue
		}
		if _, held := c.objs[o.UID]; !held && c.listRV > 0 && so.ResourceVersion <= c.listRV {
			// A LIST newer than this copy did not return the object: it
			// was deleted since (a deletion the sharer missed).
			c.gone[o.UID] = true
			continue
		}
		if c.upsert(o) {
			changed[so.Cluster] = true
		}
	}
	fns := map[string][]func(string){}
	for cluster := range changed {
		fns[cluster] = r.recompile(cluster, true)
	}
	r.mu.Unlock()
	for cluster, fs := range fns {
		for _, fn := range fs {
			fn(cluster)
		}
	}
}

// snapshot is the resourceVersion of each known object (-1: gone).
func (c *clusterObjects) snapshot() map[types.UID]int64 {
	out := make(map[types.UID]int64, len(c.objs)+len(c.gone))
	for uid, k := range c.objs {
		out[uid] = k.rv
	}
	for uid := range c.gone {
		out[uid] = -1
	}
	return out
}

// diff returns the objects that changed since before, as shared rows.
func (c *clusterObjects) diff(cluster string, before map[types.UID]int64) []store.RuleObject {
	var out []store.RuleObject
	for uid, k := range c.objs {
		if rv, ok := before[uid]; !ok || rv != k.rv {
			raw, err := json.Marshal(k.obj)
			if err != nil {
				continue
			}
			out = append(out, store.RuleObject{Cluster: cluster, UID: string(uid), ResourceVersion: k.rv, Object: raw})
		}
	}
	for uid := range c.gone {
		if rv, ok := before[uid]; !ok || rv != -1 {
			out = append(out, store.RuleObject{Cluster: cluster, UID: string(uid), Deleted: true})
		}
	}
	return out
}

func isControllerEvent(ev *auditv1.Event) bool {
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != v1alpha1.GroupVersion.Group || ref.Resource != "optionsrecordcontrollers" {
		return false
	}
	if ev.Stage != auditv1.StageResponseComplete || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
		return false
	}
	return !filter.IsDryRun(ev)
}

func (r *Registry) apply(c *clusterObjects, ev *auditv1.Event) bool {
	if ev.ResponseObject == nil {
		return false
	}
	raw := ev.ResponseObject.Raw
	switch ev.Verb {
	case "create", "update", "patch":
		var o v1alpha1.OptionsRecordController
		if json.Unmarshal(raw, &o) != nil || o.UID == "" {
			return false
		}
		// A write that removes the last finalizer of an object being
		// deleted deletes it, and no delete event follows. The garbage
		// collector removes finalizers through the metadata API, which
		// answers with the object's metadata.
		if (o.Kind == v1alpha1.Kind || o.Kind == "PartialObjectMetadata") && o.DeletionTimestamp != nil && len(o.Finalizers) == 0 {
			return c.remove(o.UID, o.Namespace, o.Name)
		}
		if o.Kind != v1alpha1.Kind {
			return false
		}
		return c.upsert(o)
	case "delete":
		// Custom objects answer a delete with a Status; the object itself
		// when finalizers hold it.
		var st struct {
			Kind     string `json:"kind"`
			Metadata struct {
				UID        types.UID `json:"uid"`
				Finalizers []string  `json:"finalizers"`
			} `json:"metadata"`
			Details *struct {
				UID types.UID `json:"uid"`
			} `json:"details"`
		}
		if json.Unmarshal(raw, &st) != nil {
			return false
		}
		if st.Kind == v1alpha1.Kind && len(st.Metadata.Finalizers) > 0 {
			var o v1alpha1.OptionsRecordController
			if json.Unmarshal(raw, &o) != nil {
				return false
			}
			return c.upsert(o) // deletion pending
		}
		uid := ev.ObjectRef.UID
		if st.Details != nil && st.Details.UID != "" {
			uid = st.Details.UID
		} else if st.Metadata.UID != "" {
			uid = st.Metadata.UID
		}
		return c.remove(uid, ev.ObjectRef.Namespace, ev.ObjectRef.Name)
	case "deletecollection":
		var l v1alpha1.OptionsRecordControllerList
		if json.Unmarshal(raw, &l) != nil {
			return false
		}
		changed := false
		for _, o := range l.Items {
			// The items are the objects as they were: one a finalizer
			// holds is not gone yet (see the last finalizer's removal).
			if len(o.Finalizers) > 0 {
				continue
			}
			changed = c.remove(o.UID, o.Namespace, o.Name) || changed
		}
		return changed
	}
	return false
}
