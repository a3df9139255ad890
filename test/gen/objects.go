package gen

import (
	"strconv"
	"time"
)

// Obj is a Kubernetes object as generic JSON.
type Obj = map[string]any

// ObjMod changes an object under construction.
type ObjMod func(Obj)

func meta(o Obj) Obj { return o["metadata"].(Obj) }

// Object builds apiVersion/kind namespace/name with uid and resourceVersion.
func Object(apiVersion, kind, namespace, name, uid string, rv int64, mods ...ObjMod) Obj {
	md := Obj{
		"name": name, "uid": uid, "resourceVersion": strconv.FormatInt(rv, 10),
		"creationTimestamp": Base.Format(time.RFC3339),
		"managedFields": []any{Obj{"manager": "kubectl", "operation": "Update", "apiVersion": apiVersion,
			"time": Base.Format(time.RFC3339), "fieldsType": "FieldsV1", "fieldsV1": Obj{"f:data": Obj{}}}},
	}
	if namespace != "" {
		md["namespace"] = namespace
	}
	o := Obj{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for _, m := range mods {
		m(o)
	}
	return o
}

// ConfigMap builds a ConfigMap with data.
func ConfigMap(ns, name, uid string, rv int64, data map[string]string, mods ...ObjMod) Obj {
	o := Object("v1", "ConfigMap", ns, name, uid, rv, mods...)
	d := Obj{}
	for k, v := range data {
		d[k] = v
	}
	o["data"] = d
	return o
}

// Secret builds an Opaque Secret with base64 data values given in clear.
func Secret(ns, name, uid string, rv int64, data map[string]string, mods ...ObjMod) Obj {
	o := Object("v1", "Secret", ns, name, uid, rv, mods...)
	d := Obj{}
	for k, v := range data {
		d[k] = b64(v)
	}
	o["data"] = d
	o["type"] = "Opaque"
	return o
}

// Deployment builds an apps/v1 Deployment with replicas.
func Deployment(ns, name, uid string, rv int64, replicas int, mods ...ObjMod) Obj {
	o := Object("apps/v1", "Deployment", ns, name, uid, rv, mods...)
	o["spec"] = Obj{"replicas": replicas, "selector": Obj{"matchLabels": Obj{"app": name}},
		"template": Obj{"metadata": Obj{"labels": Obj{"app": name}},
			"spec": Obj{"containers": []any{Obj{"name": "app", "image": "registry.example/app:1"}}}}}
	o["status"] = Obj{"replicas": replicas, "observedGeneration": 1}
	return o
}

// NamespaceObj builds a Namespace (Terminating when terminating).
func NamespaceObj(name, uid string, rv int64, terminating bool) Obj {
	o := Object("v1", "Namespace", "", name, uid, rv)
	o["spec"] = Obj{"finalizers": []any{"kubernetes"}}
	o["status"] = Obj{"phase": "Active"}
	if terminating {
		meta(o)["deletionTimestamp"] = Base.Format(time.RFC3339)
		o["status"] = Obj{"phase": "Terminating"}
	}
	return o
}

// Labels sets labels.
func Labels(kv ...string) ObjMod {
	return func(o Obj) {
		l := Obj{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		meta(o)["labels"] = l
	}
}

// Annotation sets one annotation.
func Annotation(k, v string) ObjMod {
	return func(o Obj) {
		a, _ := meta(o)["annotations"].(Obj)
		if a == nil {
			a = Obj{}
		}
		a[k] = v
		meta(o)["annotations"] = a
	}
}

// Finalizers sets metadata.finalizers.
func Finalizers(f ...string) ObjMod {
	return func(o Obj) {
		l := make([]any, len(f))
		for i := range f {
			l[i] = f[i]
		}
		meta(o)["finalizers"] = l
	}
}

// Deleting sets metadata.deletionTimestamp.
func Deleting() ObjMod {
	return func(o Obj) { meta(o)["deletionTimestamp"] = Base.Format(time.RFC3339) }
}

// OwnedBy adds an owner reference.
func OwnedBy(apiVersion, kind, name, uid string) ObjMod {
	return func(o Obj) {
		refs, _ := meta(o)["ownerReferences"].([]any)
		meta(o)["ownerReferences"] = append(refs, Obj{"apiVersion": apiVersion, "kind": kind, "name": name, "uid": uid, "controller": true})
	}
}

// Status is a metav1.Status as DELETE answers it for most kinds.
func Status(group, kind, name, uid string) Obj {
	return Obj{"kind": "Status", "apiVersion": "v1", "metadata": Obj{}, "status": "Success",
		"details": Obj{"name": name, "group": group, "kind": kind, "uid": uid}}
}

// List is a List response (deletecollection) of items. As the apiserver
// sends it, the items carry no apiVersion and kind of their own.
func List(apiVersion, kind string, rv int64, items ...Obj) Obj {
	l := make([]any, len(items))
	for i := range items {
		it := make(Obj, len(items[i]))
		for k, v := range items[i] {
			if k != "apiVersion" && k != "kind" {
				it[k] = v
			}
		}
		l[i] = it
	}
	return Obj{"apiVersion": apiVersion, "kind": kind, "metadata": Obj{"resourceVersion": strconv.FormatInt(rv, 10)}, "items": l}
}

// Scale is an autoscaling/v1 Scale as deployments/scale answers it.
func Scale(ns, name, uid string, rv int64, replicas int) Obj {
	o := Object("autoscaling/v1", "Scale", ns, name, uid, rv)
	delete(meta(o), "managedFields")
	o["spec"] = Obj{"replicas": replicas}
	o["status"] = Obj{"replicas": replicas}
	return o
}

// DeleteOptions is a DeleteOptions request body.
func DeleteOptions(dryRun bool) Obj {
	o := Obj{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
	if dryRun {
		o["dryRun"] = []any{"All"}
	}
	return o
}
