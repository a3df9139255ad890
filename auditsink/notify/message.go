package notify

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/options-record/options-record/store"
)

// Incident kinds.
const (
	KindNamespaceDeletion = "namespace-deletion"
	KindDeleteCollection  = "deletecollection"
	KindChanges           = "changes"
	KindRefused           = "refused"
)

// maxListed bounds the changes a message lists; Count says how many there
// were.
const maxListed = 50

// Incident is what one message says: the webhook's JSON body, and what the
// other formats are written from. Every string in it but Key, Kind and the
// times was recorded from the cluster: hostile.
type Incident struct {
	// Key is the message's key: the same on every delivery of it.
	Key     string `json:"key"`
	Cluster string `json:"cluster"`
	// Kind is namespace-deletion (a namespace's deletion and the objects
	// its cascade deleted), deletecollection, changes (a burst by one
	// user), or refused (one user's attempts the cluster refused: nothing
	// changed, nothing to undo).
	Kind string `json:"kind"`
	// Namespace is the deleted namespace of a namespace-deletion.
	Namespace string `json:"namespace,omitempty"`
	// Initiator is who started it: for a namespace's cascade, the user who
	// deleted the namespace (nil when the record holds no such deletion).
	Initiator *Actor `json:"initiator,omitempty"`
	// From and To are the times of the first and the last change.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Count is the changes of the message; Cascade of them were done by the
	// namespace controller on the initiator's behalf.
	Count   int `json:"count"`
	Cascade int `json:"cascade"`
	// ByResource counts the changes by resource ("configmaps",
	// "deployments.apps").
	ByResource map[string]int `json:"byResource"`
	// Changes are the first changes (at most 50), oldest first.
	Changes []Change `json:"changes"`
	// Undo are the kubectl record commands that bring it back.
	Undo []string `json:"undo"`
	// Rules are the rules whose routes sent it.
	Rules []string `json:"rules"`
}

// Actor is who made a change. SourceIPs and UserAgent are what the client
// said: never proof of anything.
type Actor struct {
	User             string    `json:"user"`
	ImpersonatedUser string    `json:"impersonatedUser,omitempty"`
	SourceIPs        []string  `json:"sourceIPs,omitempty"`
	UserAgent        string    `json:"userAgent,omitempty"`
	AuditID          string    `json:"auditID"`
	At               time.Time `json:"at"`
}

// Change is one recorded change: never the object's content.
type Change struct {
	Verb      string    `json:"verb"`
	Group     string    `json:"group,omitempty"`
	Resource  string    `json:"resource"`
	Kind      string    `json:"kind,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Deleted   bool      `json:"deleted"`
	User      string    `json:"user"`
	At        time.Time `json:"at"`
	// Refused is set for an attempt the cluster refused, with its HTTP
	// status.
	Refused bool  `json:"refused,omitempty"`
	Code    int32 `json:"code,omitempty"`
}

// cascadeUser reports whether user is one the namespace controller acts
// as (migrations: cascade_actors).
func cascadeUser(user string) bool {
	switch user {
	case "system:kube-controller-manager", "system:serviceaccount:kube-system:namespace-controller":
		return true
	}
	return false
}

// NewIncident is what message m says.
func NewIncident(m *store.NotificationMessage) *Incident {
	in := &Incident{Key: m.ID, Cluster: m.Cluster, Kind: KindChanges, ByResource: map[string]int{}}
	if ns, ok := strings.CutPrefix(m.GroupKey, "namespace:"); ok {
		in.Kind, in.Namespace = KindNamespaceDeletion, ns
	} else if strings.HasPrefix(m.GroupKey, "collection:") {
		in.Kind = KindDeleteCollection
	} else if strings.HasPrefix(m.GroupKey, "refused:") {
		in.Kind = KindRefused
	}
	rules := map[string]bool{}
	for i := range m.Items {
		it := &m.Items[i]
		if i == 0 || it.ChangedAt.Before(in.From) {
			in.From = it.ChangedAt
		}
		if it.ChangedAt.After(in.To) {
			in.To = it.ChangedAt
		}
		in.Count++
		in.ByResource[resourceName(it.APIGroup, it.Resource)]++
		if in.Kind == KindNamespaceDeletion && cascadeUser(it.Username) {
			in.Cascade++
		}
		if it.Rule != "" {
			rules[it.Rule] = true
		}
		if len(in.Changes) < maxListed {
			in.Changes = append(in.Changes, Change{Verb: it.Verb, Group: it.APIGroup, Resource: it.Resource, Kind: it.Kind,
				Namespace: it.Namespace, Name: it.Name, Deleted: it.Deleted, User: it.Username, At: it.ChangedAt})
			if it.Refused {
				c := &in.Changes[len(in.Changes)-1]
				c.Refused, c.Code = true, it.ResponseCode
			}
		}
	}
	for r := range rules {
		in.Rules = append(in.Rules, r)
	}
	sort.Strings(in.Rules)
	in.Initiator = initiator(m, in)
	in.Undo = undo(in, m.Items)
	return in
}

// initiator is who started the incident: the namespace's deleter for a
// namespace's cascade, else the first change's user.
func initiator(m *store.NotificationMessage, in *Incident) *Actor {
	if in.Kind == KindNamespaceDeletion {
		for i := range m.Items {
			it := &m.Items[i]
			if it.APIGroup == "" && it.Resource == "namespaces" && it.Name == in.Namespace && it.Verb == "delete" {
				return actor(it)
			}
		}
		if m.Initiator != nil {
			return actor(m.Initiator)
		}
		return nil
	}
	if len(m.Items) == 0 {
		return nil
	}
	return actor(&m.Items[0])
}

func actor(it *store.NotificationItem) *Actor {
	a := &Actor{User: it.Username, SourceIPs: it.SourceIPs, AuditID: it.AuditID, At: it.ChangedAt}
	if it.ImpersonatedUser != nil {
		a.ImpersonatedUser = *it.ImpersonatedUser
	}
	if it.UserAgent != nil {
		a.UserAgent = *it.UserAgent
	}
	return a
}

// resourceName is resource.group, as kubectl writes a type.
func resourceName(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// Summary is one line saying what happened (recorded strings as they are;
// each format escapes them).
func (in *Incident) Summary() string {
	who := "someone the record does not name"
	if in.Initiator != nil {
		who = in.Initiator.User
	}
	switch {
	case in.Kind == KindRefused && in.Count == 1:
		c := in.Changes[0]
		return fmt.Sprintf("%s was refused (%d): %s %s/%s%s", who, c.Code, c.Verb, resourceName(c.Group, c.Resource), c.Name, inNamespace(c.Namespace))
	case in.Kind == KindRefused:
		return fmt.Sprintf("%s was refused %d times", who, in.Count)
	case in.Kind == KindNamespaceDeletion:
		return fmt.Sprintf("%s deleted namespace %s; %d changes recorded with it", who, in.Namespace, in.Count)
	case in.Count == 1:
		c := in.Changes[0]
		where := ""
		if c.Namespace != "" {
			where = " in namespace " + c.Namespace
		}
		return fmt.Sprintf("%s: %s %s/%s%s", who, pastTense(c.Verb), resourceName(c.Group, c.Resource), c.Name, where)
	case in.Kind == KindDeleteCollection:
		return fmt.Sprintf("%s deleted a collection of %d objects", who, in.Count)
	default:
		return fmt.Sprintf("%s made %d changes", who, in.Count)
	}
}

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

func pastTense(verb string) string {
	switch verb {
	case "delete", "deletecollection":
		return "deleted"
	case "create":
		return "created"
	case "update":
		return "updated"
	case "patch":
		return "patched"
	}
	return verb
}

// undo are the commands that bring the incident back: kubectl record
// restore for one object, kubectl record plan for more (a plan the caller
// reviews, then executes).
func undo(in *Incident, items []store.NotificationItem) []string {
	if in.Kind == KindRefused {
		return nil // nothing changed
	}
	before := in.From.Add(-time.Second).UTC().Format(time.RFC3339)
	after := in.To.Add(time.Second).UTC().Format(time.RFC3339)
	if in.Kind == KindNamespaceDeletion {
		at := in.From
		if in.Initiator != nil && in.Initiator.At.Before(at) {
			at = in.Initiator.At
		}
		return []string{
			"kubectl create namespace " + shq(in.Namespace),
			fmt.Sprintf("kubectl record plan as-of %s -n %s", at.Add(-time.Second).UTC().Format(time.RFC3339), shq(in.Namespace)),
		}
	}
	if in.Count == 1 {
		c := in.Changes[0]
		cmd := "kubectl record restore " + shq(resourceName(c.Group, c.Resource)+"/"+c.Name)
		if c.Namespace != "" {
			cmd += " -n " + shq(c.Namespace)
		}
		return []string{cmd}
	}
	// A plan per user and namespace (a cluster-scoped object's plan names
	// its types).
	type key struct{ user, ns string }
	types := map[key][]string{}
	var keys []key
	for i := range items {
		k := key{items[i].Username, items[i].Namespace}
		if _, ok := types[k]; !ok {
			keys = append(keys, k)
		}
		if r := resourceName(items[i].APIGroup, items[i].Resource); !slices.Contains(types[k], r) {
			types[k] = append(types[k], r)
		}
	}
	var cmds []string
	for _, k := range keys {
		if len(cmds) == 5 {
			cmds = append(cmds, fmt.Sprintf("(and %d more users or namespaces)", len(keys)-5))
			break
		}
		cmd := fmt.Sprintf("kubectl record plan undo --user %s --since %s --until %s", shq(k.user), before, after)
		if k.ns != "" {
			cmd += " -n " + shq(k.ns)
		} else {
			slices.Sort(types[k])
			cmd += " --cluster --resources " + shq(strings.Join(types[k], ","))
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9._:/@=+,-]+$`)

// shq is s as one word of a POSIX shell: as it is when it holds nothing a
// shell reads, else single-quoted.
func shq(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
