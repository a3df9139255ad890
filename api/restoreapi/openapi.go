package restoreapi

import (
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// operation describes one route: the router is built from this table and
// the OpenAPI document from it too; the golden test checks that the two
// stay in step.
type operation struct {
	Method, Path string // Path is relative to /api/v1, in chi's syntax
	ID           string
	Tag          string
	Summary      string
	Description  string
	Params       []param // query parameters
	Body         any     // request body (nil: none)
	Response     any
	Status       int    // success status
	YAML         bool   // the answer is also available as YAML
	Text         string // the answer is text of this media type (Response unused)
	Public       bool   // no authentication
}

type param struct {
	Name     string
	Type     string // string, integer, boolean, date-time
	Desc     string
	Required bool
	Enum     []string
}

func (op operation) param(name string) (param, bool) {
	for _, p := range op.Params {
		if p.Name == name {
			return p, true
		}
	}
	return param{}, false
}

func (op operation) paramNames() string {
	if len(op.Params) == 0 {
		return "none"
	}
	var names []string
	for _, p := range op.Params {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

var pathParamDocs = map[string]string{
	"cluster": "the cluster name stored with the record (`default` for a single-cluster install)",
	"uid":     "metadata.uid of the object (one incarnation)",
	"key":     "the versionKey of a version (64 hex digits)",
	"id":      "the id of a restore plan",
	"name":    "a version's short name (app-config-3f9a2c1b, or a unique prefix of its hex digits) or long name (<uid>.<versionKey>)",
	"attempt": "a failed mutation's short name (app-config-3f9a2c1b, or a unique prefix of its hex digits) or long name (<unix microseconds>.<event key>)",
}

var (
	pFormat = param{Name: "format", Type: "string", Enum: []string{"json", "yaml"}, Desc: "answer as JSON (default) or YAML (also Accept: application/yaml)"}
	pLimit  = param{Name: "limit", Type: "integer", Desc: "page size, 1 to 500 (default 100)"}
	pCursor = param{Name: "cursor", Type: "string", Desc: "the next value of the previous page"}
	pSince  = param{Name: "since", Type: "date-time", Desc: "from this time (RFC 3339, or a negative duration before now such as -24h)"}
	pUntil  = param{Name: "until", Type: "date-time", Desc: "before this time (RFC 3339, or a negative duration)"}
	pGroup  = param{Name: "group", Type: "string", Desc: "API group; present and empty selects the core group"}
	pRes    = param{Name: "resource", Type: "string", Desc: "resource (plural, e.g. configmaps)"}
	pNS     = param{Name: "namespace", Type: "string", Desc: "namespace; present and empty selects cluster-scoped objects"}
	pName   = param{Name: "name", Type: "string", Desc: "object name"}
	pUser   = param{Name: "user", Type: "string", Desc: "the authenticated caller of the change (an impersonating caller, not the identity it acted as)"}
	pDryRun = param{Name: "dryRun", Type: "boolean", Desc: "server-side dry run: nothing is changed"}
)

const readAuthz = " Needs `get` on the object's resource in its namespace (SubjectAccessReview); in lists, rows the caller may not get are left out."

var operations = []operation{
	{Method: http.MethodGet, Path: "/openapi.json", ID: "getOpenAPI", Tag: "meta", Public: true,
		Summary: "This OpenAPI document", Response: map[string]any{}, Status: 200},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/changes", ID: "searchChanges", Tag: "read",
		Summary:     "Search recorded changes",
		Description: "Versions (changes, baseline and admission observations) matching every given filter, newest first. With asOf, instead: the version of each object of one namespace that held its state at that time (the namespace as it was; namespace required; group, resource and name narrow it), by uid." + readAuthz,
		Params: []param{pGroup, pRes, pNS, pName, {Name: "uid", Type: "string", Desc: "metadata.uid"}, pUser,
			{Name: "verb", Type: "string", Enum: []string{"create", "update", "patch", "delete", "deletecollection", "baseline", "admission"}},
			pSince, pUntil, {Name: "asOf", Type: "date-time", Desc: "the objects of the namespace as they were at this time (RFC 3339, or a negative duration before now)"},
			pLimit, pCursor, pFormat},
		Response: history.Page[history.Version]{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/history", ID: "historyByName", Tag: "read",
		Summary:     "History of an object by name",
		Description: "Every version of the named object, oldest first, across incarnations (a re-created object has a new uid and starts with a create)." + readAuthz,
		Params:      []param{{Name: "group", Type: "string", Desc: "API group (empty: core)"}, {Name: "resource", Type: "string", Required: true}, {Name: "namespace", Type: "string", Desc: "empty or absent: cluster-scoped"}, {Name: "name", Type: "string", Required: true}, pLimit, pCursor, pFormat},
		Response:    history.Page[history.Version]{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/objects/{uid}/history", ID: "historyByUID", Tag: "read",
		Summary: "History of one incarnation", Description: "Every version of the object with this uid, oldest first." + readAuthz,
		Params: []param{pLimit, pCursor, pFormat}, Response: history.Page[history.Version]{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/objects/{uid}/versions/{key}", ID: "getVersion", Tag: "read",
		Summary: "One version, with the object", Description: "The version and the object's state after the change (for a delete, its last state when known)." + readAuthz,
		Params: []param{pFormat}, Response: history.Version{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/versions/{name}", ID: "getVersionByName", Tag: "read",
		Summary:     "One version by its short name, with the object",
		Description: "The version a short name names, among those the caller may read, and the object's state after the change. A name that names none of them is not found (404); one that names several is refused (400) with the list of those the caller may read: give more digits, or the long name." + readAuthz,
		Params:      []param{pFormat}, Response: history.Version{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/objects/{uid}/versions/{key}/diff", ID: "diffVersion", Tag: "read",
		Summary:     "Diff of a version against its prior state or another version",
		Description: "The changes from the state before this version (or from the version `against`) to this version, leaving out server-set fields (managedFields, resourceVersion, generation, uid, timestamps) and status unless includeStatus." + readAuthz,
		Params: []param{{Name: "against", Type: "string", Desc: "the version to compare with, as <uid>/<versionKey> or its short name (default: the state before this change)"},
			{Name: "includeStatus", Type: "boolean", Desc: "compare status too"}, pFormat},
		Response: history.DiffResult{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/objects/{uid}/versions/{key}/manifest", ID: "getManifest", Tag: "read",
		Summary:     "Clean manifest of a version, for kubectl apply",
		Description: "The state without server-set fields (uid, resourceVersion, creationTimestamp, generation, managedFields, selfLink, deletionTimestamp) and status; ownerReferences only when the owner still exists, the others reported. With format=yaml the answer is the bare manifest, the report in comments." + readAuthz,
		Params:      []param{pFormat}, Response: restore.ManifestResult{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/objects/{uid}/versions/{key}/proof", ID: "proveVersion", Tag: "read",
		Summary: "Inclusion proof of a version in the tamper-evident log",
		Description: "A C2SP tlog-proof (c2sp.org/tlog-proof) of the version against its cluster's newest signed checkpoint: its extra line carries the row's encoding and the object's exact stored text, so that `options-record verify --proof FILE` checks it offline with the log's public key (docs/security.md). " +
			"Not found (404) also when the version is not in the log yet (it is within seconds) or this API keeps no log." + readAuthz,
		Text: "text/plain; charset=utf-8", Status: 200},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/versions/{name}/proof", ID: "proveVersionByName", Tag: "read",
		Summary:     "Inclusion proof of a version by its short name",
		Description: "The inclusion proof (as proveVersion) of the version a short or long name names, among those the caller may read; not found (404) and ambiguous (400) as getVersionByName." + readAuthz,
		Text:        "text/plain; charset=utf-8", Status: 200},
	{Method: http.MethodPost, Path: "/clusters/{cluster}/objects/{uid}/versions/{key}/restore", ID: "restoreVersion", Tag: "restore",
		Summary: "Restore one version",
		Description: "Creates the object from this version's state when it is gone, updates it when it exists. Refused with 409 when the live object changed after the version the request is based on (expectedResourceVersion, or else the newest recorded version), unless force. " +
			"Refused with 422 for a state that cannot be applied (Secret values recorded as digests, no full state). Runs as the caller (impersonation): the cluster's RBAC decides, and its answer (e.g. 403) is returned as is. Recorded in the restores table. Needs `get` on the object to read its record.",
		Params: []param{pDryRun}, Body: restore.RestoreRequest{}, Response: restore.RestoreResult{}, Status: 200},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/deletions", ID: "listDeletions", Tag: "read",
		Summary:     "Who deleted what",
		Description: "Successful deletes, newest first, with the user action that started a cascade (namespace or owner deletion) and the version to restore." + readAuthz,
		Params:      []param{pGroup, pRes, pNS, pName, pUser, pSince, pUntil, pLimit, pCursor, pFormat},
		Response:    history.Page[history.Deletion]{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/failed-mutations", ID: "failedMutations", Tag: "read",
		Summary:     "Denied and failed mutations",
		Description: "Mutations the apiserver answered with a code >= 300, newest first, with the attempted request body. A page holds at most 8 MiB of bodies: it ends earlier, with a next cursor, where the next body would pass that." + readAuthz,
		Params:      []param{pGroup, pRes, pNS, pName, pUser, pSince, pUntil, pLimit, pCursor, pFormat},
		Response:    history.Page[history.Event]{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/failed-mutations/{attempt}", ID: "getFailedMutation", Tag: "read",
		Summary:     "One denied or failed mutation by its name, with the request body",
		Description: "The failed mutation (attempt) a short name or long name names, among those the caller may read. A name that names none of them is not found (404); one that names several is refused (400) with the list of those the caller may read: give more digits, or the long name." + readAuthz,
		Params:      []param{pFormat}, Response: history.Event{}, Status: 200, YAML: true},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/activity", ID: "userActivity", Tag: "read",
		Summary:     "Everything one user did",
		Description: "The recorded requests of a user (changes, and attempts that failed), newest first, with the versions they made." + readAuthz,
		Params:      []param{{Name: "user", Type: "string", Required: true, Desc: pUser.Desc}, pSince, pUntil, pLimit, pCursor, pFormat},
		Response:    history.Page[history.Event]{}, Status: 200, YAML: true},
	{Method: http.MethodPost, Path: "/clusters/{cluster}/restore-plans", ID: "createPlan", Tag: "restore",
		Summary: "Plan a restore",
		Description: "Plans putting namespaces back as of a time (as-of), or reverting a user's changes in a time range (undo): one create, update or delete per object, in a safe order (namespaces, CRDs before their objects, owners before dependents; deletes first, dependents before owners). " +
			"Nothing is changed: review the plan, then execute it. Objects a controller re-creates (controller-owned dependents, each namespace's default ServiceAccount) are skipped. Needs `get` on every resource involved.",
		Body: restore.PlanRequest{}, Response: restore.Plan{}, Status: 201},
	{Method: http.MethodGet, Path: "/clusters/{cluster}/restore-plans/{id}", ID: "getPlan", Tag: "restore",
		Summary: "A plan, with its outcome once executed", Description: "Only the plan's author may read it; to anyone else it is not found (404).",
		Params: []param{pFormat}, Response: restore.Plan{}, Status: 200, YAML: true},
	{Method: http.MethodPost, Path: "/clusters/{cluster}/restore-plans/{id}/execute", ID: "executePlan", Tag: "restore",
		Summary: "Execute a plan",
		Description: "Carries out the steps in order as the caller (impersonation), each refused if its live object changed since the plan unless force, and reports each step's outcome: partial failures are listed, not hidden (state partial, HTTP 207). A plan executes once; a dry run leaves it planned and is recorded on its own. " +
			"A real run needs the digest of the plan the caller reviewed (the plan and each dry run answer it): a plan whose steps, or a recorded state they restore, differ from it is refused (409) before anything is written. " +
			"Only the plan's author may execute it.",
		Params: []param{pDryRun}, Body: restore.ExecuteRequest{}, Response: restore.Plan{}, Status: 200},
}

// OpenAPI returns the OpenAPI 3 document of the API.
func OpenAPI() map[string]any {
	schemas := map[string]any{}
	reg := &schemaRegistry{schemas: schemas}
	errRef := reg.ref(reflect.TypeOf(ErrorBody{}))
	paths := map[string]any{}
	for _, op := range operations {
		item, _ := paths[apiPrefix+op.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[apiPrefix+op.Path] = item
		}
		var params []any
		for _, m := range pathParamRE.FindAllStringSubmatch(op.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"description": pathParamDocs[m[1]], "schema": map[string]any{"type": "string"}})
		}
		for _, p := range op.Params {
			sch := map[string]any{"type": p.Type}
			if p.Type == "date-time" {
				sch = map[string]any{"type": "string", "description": "RFC 3339 time, or a negative Go duration before now"}
			}
			if len(p.Enum) > 0 {
				sch["enum"] = p.Enum
			}
			pp := map[string]any{"name": p.Name, "in": "query", "schema": sch}
			if p.Desc != "" {
				pp["description"] = p.Desc
			}
			if p.Required {
				pp["required"] = true
			}
			params = append(params, pp)
		}
		var content map[string]any
		if op.Text != "" {
			content = map[string]any{op.Text: map[string]any{"schema": map[string]any{"type": "string"}}}
		} else {
			content = map[string]any{"application/json": map[string]any{"schema": reg.ref(reflect.TypeOf(op.Response))}}
		}
		if op.YAML {
			content["application/yaml"] = map[string]any{"schema": reg.ref(reflect.TypeOf(op.Response))}
		}
		responses := map[string]any{
			strconv.Itoa(op.Status): map[string]any{"description": "success", "content": content},
		}
		if op.ID == "executePlan" {
			responses["207"] = map[string]any{"description": "some steps failed: see outcome", "content": content}
		}
		for code, what := range errorResponses(op) {
			responses[code] = map[string]any{"description": what,
				"content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		}
		o := map[string]any{"operationId": op.ID, "summary": op.Summary, "tags": []string{op.Tag}, "responses": responses}
		if op.Description != "" {
			o["description"] = op.Description
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if op.Body != nil {
			o["requestBody"] = map[string]any{"required": false, "content": map[string]any{
				"application/json": map[string]any{"schema": reg.ref(reflect.TypeOf(op.Body))}}}
		}
		if op.Public {
			o["security"] = []any{}
		}
		item[strings.ToLower(op.Method)] = o
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":   "Options Record restore API",
			"version": "v1",
			"description": "Reads the record of Kubernetes object changes and restores objects. Every call but this document needs a bearer token: " +
				"a Kubernetes token checked by TokenReview (authorization by SubjectAccessReview), or in standalone mode the static token (read-only, loopback only).",
		},
		"servers":    []any{map[string]any{"url": "/"}},
		"security":   []any{map[string]any{"bearer": []string{}}},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
	}
}

var pathParamRE = regexp.MustCompile(`\{([a-z]+)\}`)

func errorResponses(op operation) map[string]string {
	if op.Public {
		return nil
	}
	out := map[string]string{
		"400": "invalid parameters or body",
		"401": "no or invalid bearer token",
		"403": "the caller may not read this (SubjectAccessReview)",
		"404": "not found, or a cluster this API does not serve",
		"429": "too many requests of the caller, or of all callers, in flight: retry after Retry-After seconds",
		"504": "the request ran out of time (its deadline, or the database's statement timeout): narrow it",
	}
	if op.Tag == "restore" {
		out["403"] = "not allowed: by this API, or by the cluster for the impersonated call (fromCluster)"
		out["409"] = "the live object changed after the version the request was based on, or the plan was executed already"
		out["422"] = "the state cannot be restored (Secret values recorded as digests, no full state)"
	}
	return out
}

// schemaRegistry derives JSON schemas from Go types.
type schemaRegistry struct{ schemas map[string]any }

var timeType = reflect.TypeOf(time.Time{})

func (g *schemaRegistry) ref(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType {
		return g.schema(t)
	}
	name := schemaName(t)
	if _, ok := g.schemas[name]; !ok {
		g.schemas[name] = nil // breaks recursion
		g.schemas[name] = g.object(t)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func schemaName(t reflect.Type) string {
	n := t.Name()
	// Page[github.com/.../history.Version] → VersionPage
	if i := strings.IndexByte(n, '['); i >= 0 {
		inner := n[i+1 : len(n)-1]
		inner = inner[strings.LastIndexByte(inner, '.')+1:]
		return inner + n[:i]
	}
	return n
}

func (g *schemaRegistry) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == reflect.TypeOf([]byte(nil)) || t.Name() == "RawMessage":
		return map[string]any{"type": "object", "description": "a Kubernetes object (JSON)"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.ref(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.ref(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "additionalProperties": g.ref(t.Elem())}
	case reflect.Interface:
		return map[string]any{"description": "any JSON value"}
	case reflect.Struct:
		return g.ref(t)
	}
	return map[string]any{}
}

func (g *schemaRegistry) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		out["required"] = required
	}
	return out
}

func (g *schemaRegistry) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			g.fields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.schema(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]any{"allOf": []any{s}, "description": d}
			} else {
				c := map[string]any{}
				for k, v := range s {
					c[k] = v
				}
				c["description"] = d
				s = c
			}
		}
		props[name] = s
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
}
