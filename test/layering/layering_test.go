package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/options-record/options-record"

// allowed says which packages of the module each product package may
// import directly (non-test imports). A package missing from it fails the
// check, so a new package states its place. docs/architecture.md draws the
// same table.
var allowed = map[string][]string{
	// model: the API types, the schema, the row types and their conversion
	"api/v1alpha1":        nil,
	"api/record/v1alpha1": nil,
	"migrations":          nil,
	"store/model":         {"store/model/jsonfast", "store/model/jsonscan"},
	// The one JSON scanner, which the model, the rules and the ingest walk
	// JSON text with.
	"store/model/jsonscan": nil,
	// The one use of sonic (the ingest's hot path), with its
	// encoding/json fallback.
	"store/model/jsonfast": nil,
	"store":                {"migrations", "store/model", "store/model/jsonscan", "store/partitions", "store/pgarray", "store/reads", "store/tamper/refpack", "store/tamper/rowenc"},
	"store/partitions":     nil,
	// The tamper-evident log: its integrator and verify.
	"store/tamper": {"api/tlogproof", "store/pgarray", "store/tamper/refpack", "store/tamper/rowenc"},
	// The log's one encoding of a row, which the ingest's digests share.
	"store/tamper/rowenc": nil,
	// The layout of a pending batch's packed references, which the ingest
	// writes and the integrator reads.
	"store/tamper/refpack": nil,
	// The log's array parameters, encoded with no allocation per element.
	"store/pgarray": nil,
	// The one parser of a proof's text (store/tamper, the plugin).
	"api/tlogproof":        nil,
	"store/reads":          {"api/errs"},
	"store/pgembed":        nil,
	"store/pgtest":         {"store/pgembed"},
	"filter":               {"api/v1alpha1", "store/model/jsonscan"},
	"api/restore/manifest": nil,
	// The one digest pinning what a caller reviewed.
	"api/restore/digest": nil,
	// The one limiter of unauthenticated callers, for every front door.
	"api/authlimit": nil,
	// The one escape of recorded strings shown to a person.
	"api/escape": nil,
	// The services' errors and their one map to status codes.
	"api/errs": nil,
	// The release of this build (stamped by the Makefile), for every
	// command and the aggregated API's /version.
	"api/version": nil,
	// The direct door's URL scheme, which the services write as links.
	"api/restoreapi/paths": nil,
	// The rule of short names, for the API and the plugin alike.
	"api/shortname": nil,
	// services
	"auditsink": {"api/authlimit", "auditsink/decode", "filter", "store/model"},
	// GKE's audit logs pushed by Pub/Sub: an adapter in front of the pipeline.
	"auditsink/pubsub": {"auditsink", "auditsink/decode"},
	// The tests' shipper of GKE's entries and stand-in for Google's tokens.
	"auditsink/pubsub/pubsubtest": {"auditsink/pubsub"},
	// The ingest's decoding of EventLists (whole, item by item, streamed)
	// and audit log files: no network.
	"auditsink/decode":  {"store/model/jsonfast", "store/model/jsonscan"},
	"auditsink/journal": {"store", "store/model"},
	// The notification sender: the outbox (store), the one limiter, the
	// one escape.
	"auditsink/notify": {"api/authlimit", "api/escape", "store"},
	// The managed clusters' sources: EKS's Firehose endpoint.
	"auditsink/firehose": {"auditsink", "auditsink/decode"},
	// AKS's Event Hubs consumer (its checkpoints are the store's, through
	// an interface).
	"auditsink/eventhubs": {"auditsink", "auditsink/decode"},
	// The observing webhook: reviews in, observations to the store's writer.
	"auditsink/admission":     {"auditsink", "store/model", "store/model/jsonfast"},
	"filter/rulesync":         {"api/v1alpha1", "filter", "store", "store/model"},
	"api/history/diff":        nil,
	"api/history":             {"api/errs", "api/escape", "api/history/diff", "api/restoreapi/paths", "api/shortname", "store"},
	"api/restore/impersonate": {"api/errs", "api/restore/manifest"},
	"api/restore/restorable":  {"api/errs", "api/history", "api/restore/impersonate", "api/restore/manifest", "store", "store/model"},
	"api/restore/planner": {"api/errs", "api/history", "api/restore/digest", "api/restore/impersonate", "api/restore/manifest",
		"api/restore/restorable", "store"},
	"api/restore": {"api/errs", "api/history", "api/restore/digest", "api/restore/impersonate", "api/restore/manifest",
		"api/restore/planner", "api/restore/restorable", "api/restoreapi/paths", "store"},
	// front doors
	"api/restoreapi":         {"api/authlimit", "api/errs", "api/history", "api/record/v1alpha1", "api/restore", "api/restore/manifest", "api/restoreapi/paths", "api/shortname"},
	"api/aggregated/openapi": {"api/record/v1alpha1"},
	// The record's typed client (client-gen): the types, and client-go.
	"api/record/clientset/versioned/scheme":                {"api/record/v1alpha1"},
	"api/record/clientset/versioned/typed/record/v1alpha1": {"api/record/clientset/versioned/scheme", "api/record/v1alpha1"},
	"api/record/clientset/versioned":                       {"api/record/clientset/versioned/typed/record/v1alpha1"},
	"api/aggregated/registry":                              {"api/errs", "api/escape", "api/history", "api/shortname"},
	"api/aggregated/registry/record":                       {"api/aggregated/registry", "api/errs", "api/escape", "api/history", "api/record/v1alpha1", "api/restore", "api/shortname"},
	"api/aggregated/registry/restores":                     {"api/aggregated/registry", "api/errs", "api/history", "api/record/v1alpha1", "api/restore", "api/shortname"},
	"api/aggregated":                                       {"api/aggregated/openapi", "api/aggregated/registry/record", "api/aggregated/registry/restores", "api/authlimit", "api/history", "api/record/v1alpha1", "api/restore", "api/version"},
	"cmd/options-record/app/certs":                         nil,
	// The sql command's query and table; the import's batches and report;
	// the secrets kept in files.
	"cmd/options-record/app/sqlcmd":     {"api/escape"},
	"cmd/options-record/app/importer":   {"auditsink", "auditsink/decode"},
	"cmd/options-record/app/secretfile": nil,
	// wiring and mains
	"cmd/options-record/app": {"api/aggregated", "api/authlimit", "api/history", "api/restore", "api/restoreapi", "api/v1alpha1",
		"auditsink", "auditsink/admission", "auditsink/eventhubs", "auditsink/firehose", "auditsink/journal", "auditsink/notify", "auditsink/pubsub", "cmd/options-record/app/certs", "cmd/options-record/app/importer",
		"cmd/options-record/app/secretfile", "cmd/options-record/app/sqlcmd", "filter", "filter/rulesync", "store", "store/model", "store/pgembed",
		"store/tamper"},
	"cmd/options-record/app/options":     {"api/history", "cmd/options-record/app"},
	"cmd/options-record":                 {"api/version", "cmd/options-record/app", "cmd/options-record/app/options"},
	"cmd/audit-replay":                   nil,
	"cmd/kubectl-record/app/ui":          nil,
	"cmd/kubectl-record/app/cmd/version": {"api/version"},
	// The plugin: shared text and shared plumbing, then one package per verb.
	"cmd/kubectl-record/app/format":     {"api/escape", "api/record/v1alpha1", "api/restore/manifest"},
	"cmd/kubectl-record/app/cmdtesting": nil,
	"cmd/kubectl-record/app/cmdutil": {"api/escape", "api/record/clientset/versioned",
		"api/record/clientset/versioned/typed/record/v1alpha1", "api/record/v1alpha1", "api/restore/manifest", "api/shortname",
		"cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/activity":  {"api/record/v1alpha1", "api/shortname", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/deletions": {"api/record/v1alpha1", "api/shortname", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/diff":      {"api/history/diff", "api/record/v1alpha1", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/export":    {"api/escape", "api/record/v1alpha1", "api/restore/manifest", "api/tlogproof", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/history":   {"api/record/v1alpha1", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/manifest":  {"api/restore/manifest", "cmd/kubectl-record/app/cmdutil"},
	"cmd/kubectl-record/app/cmd/plan":      {"api/record/v1alpha1", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/restore":   {"api/record/v1alpha1", "cmd/kubectl-record/app/cmdutil", "cmd/kubectl-record/app/format"},
	"cmd/kubectl-record/app/cmd/ui": {"api/escape", "api/history/diff", "api/record/v1alpha1", "cmd/kubectl-record/app/cmdutil",
		"cmd/kubectl-record/app/format", "cmd/kubectl-record/app/ui"},
	"cmd/kubectl-record/app": {"api/escape", "cmd/kubectl-record/app/cmdutil",
		"cmd/kubectl-record/app/cmd/activity", "cmd/kubectl-record/app/cmd/deletions", "cmd/kubectl-record/app/cmd/diff",
		"cmd/kubectl-record/app/cmd/export", "cmd/kubectl-record/app/cmd/history", "cmd/kubectl-record/app/cmd/manifest",
		"cmd/kubectl-record/app/cmd/plan", "cmd/kubectl-record/app/cmd/restore", "cmd/kubectl-record/app/cmd/ui", "cmd/kubectl-record/app/cmd/version"},
	"cmd/kubectl-record": {"cmd/kubectl-record/app"},
}

// pure are the packages that must not reach, even through other packages,
// the database driver, the store, the Kubernetes clients or an HTTP router:
// the rule engine, the record model, the manifest cleaner, the services'
// errors, the direct door's paths, the escape and the JSON scanner (which,
// as the paths, reach nothing outside the standard library, nor the
// network).
var pure = map[string][]string{
	"api/restoreapi/paths": {"github.com/", "k8s.io/", "sigs.k8s.io/", "golang.org/", "net/http", module + "/"},
	"api/shortname":        {"github.com/", "k8s.io/", "sigs.k8s.io/", "golang.org/", "net", module + "/"},
	"api/errs":             {"github.com/jackc/", "k8s.io/client-go/", "github.com/go-chi/", module + "/"},
	"api/escape":           {"github.com/", "k8s.io/", "sigs.k8s.io/", "golang.org/", "net", module + "/"},
	"api/restore/digest":   {"github.com/", "k8s.io/", "sigs.k8s.io/", "golang.org/", "net", module + "/"},
	"store/model/jsonscan": {"github.com/", "k8s.io/", "sigs.k8s.io/", "golang.org/", "net", module + "/"},
	"filter":               {"github.com/jackc/", "k8s.io/client-go/", "github.com/go-chi/", module + "/store", module + "/migrations"},
	"store/model":          {"github.com/jackc/", "k8s.io/client-go/", "github.com/go-chi/", module + "/store", module + "/migrations"},
	"store/model/jsonfast": {"k8s.io/", "sigs.k8s.io/", "github.com/jackc/", "github.com/go-chi/", "net/http", module + "/"},
	"api/restore/manifest": {"github.com/jackc/", "k8s.io/client-go/", "github.com/go-chi/", module + "/store", module + "/migrations", module + "/api/history"},
	"api/history/diff":     {"github.com/jackc/", "k8s.io/client-go/", "github.com/go-chi/", module + "/store", module + "/migrations"},
}

// pureExcept is the one package of the module a pure package may reach
// although its pure rule names the path it lies under: the rules may walk
// JSON with the record model's scanner, and reach nothing else of the store.
var pureExcept = map[string]string{
	"filter": "store/model/jsonscan",
}

// direct are imports a package must not use itself (it may reach them
// through the Kubernetes libraries it builds on).
var direct = map[string][]string{
	"api/restoreapi/paths": {"os", "io", "net/http", "syscall"},
	"api/shortname":        {"os", "io", "net/", "syscall"},
	"api/errs":             {"os", "io", "net/", "syscall", "github.com/jackc/"},
	"api/escape":           {"os", "io", "net/", "syscall"},
	"api/restore/digest":   {"os", "io", "net/", "syscall"},
	"store/model/jsonscan": {"os", "io", "net/", "syscall"},
	"filter":               {"net/http"},
	"store/model":          {"net/http"},
	"store/model/jsonfast": {"os", "io", "net/", "syscall"},
	// The ingest's decoder reads what it is handed (a body, a reader, a
	// log file): it never serves or dials.
	"auditsink/decode":     {"net", "net/"},
	"store":                {"k8s.io/client-go/", "net/http"},
	"store/partitions":     {"k8s.io/client-go/", "net/http"},
	"store/reads":          {"k8s.io/client-go/", "net/http"},
	"api/history":          {"net/http", "github.com/go-chi/", "k8s.io/client-go/"},
	"api/restore/manifest": {"net/http"},
	"api/history/diff":     {"net/http"},
	"api/restore":          {"net/http", "github.com/go-chi/"},
	// The planner reads the record through its Reader and the cluster
	// through package impersonate; restorable reads nothing.
	"api/restore/planner":    {"net/http", "github.com/go-chi/", "github.com/jackc/"},
	"api/restore/restorable": {"net/http", "github.com/go-chi/", "github.com/jackc/", "k8s.io/client-go/"},
	// The plugin's text: it never talks to the cluster or touches files.
	"cmd/kubectl-record/app/format": {"os", "net/", "k8s.io/client-go/"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// TestLayering checks each product package's direct imports of the module
// against allowed, and the transitive imports of the pure packages.
func TestLayering(t *testing.T) {
	var bad []string
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		if strings.HasPrefix(from, "test/") || strings.HasPrefix(from, "hack/") {
			continue // test tooling may reach anything
		}
		seen[from] = true
		ok, known := allowed[from]
		if !known {
			bad = append(bad, from+": not in test/layering's allowed table: give the new package its place in the layers")
			continue
		}
		for _, imp := range p.Imports {
			if to, in := rel(imp); in {
				if !contains(ok, to) {
					bad = append(bad, from+" -> "+to+": not allowed (allowed: "+strings.Join(ok, " ")+")")
				}
				continue
			}
			for _, f := range direct[from] {
				if imp == f || strings.HasPrefix(imp, f) && strings.HasSuffix(f, "/") {
					bad = append(bad, from+" imports "+imp+": "+from+" must not use "+f)
				}
			}
		}
		for _, dep := range p.Deps {
			for _, f := range pure[from] {
				if pureExcept[from] != "" && dep == module+"/"+pureExcept[from] {
					continue
				}
				if dep == f || strings.HasPrefix(dep, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(dep, f+"/")) {
					if strings.HasPrefix(dep, module+"/") && strings.HasPrefix(dep, p.ImportPath+"/") {
						continue
					}
					bad = append(bad, from+" reaches "+dep+" (transitively): "+from+" is pure")
				}
			}
		}
	}
	for name := range allowed {
		if !seen[name] {
			bad = append(bad, name+": in the allowed table but not in the module (moved or removed?)")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
