package shipcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The names the shipped manifests and the checks agree on.
const (
	sinkNamespace  = "options-record"
	sinkName       = "options-record" // StatefulSet, ServiceAccount, container
	sinkSA         = "system:serviceaccount:" + sinkNamespace + ":" + sinkName
	sinkContainer  = "options-record"
	webhookService = "options-record-webhook"
	// The restore API's Deployment and ServiceAccount (components/restore-api).
	apiName = "options-record-api"
	apiSA   = "system:serviceaccount:" + sinkNamespace + ":" + apiName
)

// releaseImage is the project's image, named once in deploy/components/image.
const releaseImage = "ghcr.io/options-record/options-record"

// operatorSecrets are the Secrets the install reads but does not ship
// (deploy/README.md tells how to create them): the default install's, and
// the notifications component's destinations file and the tamper-log
// component's signing key.
var operatorSecrets = []string{"options-record-tls", "options-record-webhook", "options-record-database", "options-record-database-api", "options-record-secret-digest",
	"options-record-notify", "options-record-log-signing-key"}

// typed converts a rendered object into its Go type, failing on fields the
// type does not know (a typo in a manifest).
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out
}

type workload struct {
	kind, name string
	replicas   int32
	template   corev1.PodTemplateSpec
	selector   map[string]string
	claims     []string // a StatefulSet's volumeClaimTemplates
}

func workloads(t testing.TB, objs []*unstructured.Unstructured) []workload {
	t.Helper()
	var out []workload
	for _, u := range find(objs, "Deployment", "") {
		d := typed[appsv1.Deployment](t, u)
		out = append(out, workload{kind: "Deployment", name: d.Name, replicas: ptrOr(d.Spec.Replicas, 1),
			template: d.Spec.Template, selector: d.Spec.Selector.MatchLabels})
	}
	for _, u := range find(objs, "StatefulSet", "") {
		s := typed[appsv1.StatefulSet](t, u)
		w := workload{kind: "StatefulSet", name: s.Name, replicas: ptrOr(s.Spec.Replicas, 1),
			template: s.Spec.Template, selector: s.Spec.Selector.MatchLabels}
		for _, c := range s.Spec.VolumeClaimTemplates {
			w.claims = append(w.claims, c.Name)
		}
		out = append(out, w)
	}
	return out
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

var digestRef = regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

func TestManifests(t *testing.T) {
	t.Parallel()
	flags := serveFlags(t)
	for _, v := range renderAll(t) {
		t.Run(v.name, func(t *testing.T) {
			for _, o := range v.objects {
				if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" || isClusterScoped(o.GetKind()) {
					continue
				}
				if isFrontProxyReader(o) {
					continue // the one object outside the namespace, by design
				}
				if o.GetNamespace() != sinkNamespace {
					t.Errorf("%s %s is in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), sinkNamespace)
				}
			}
			for _, o := range v.objects {
				if o.GetKind() != "CustomResourceDefinition" && o.GetLabels()["app.kubernetes.io/name"] != "options-record" {
					t.Errorf("%s %s lacks the label app.kubernetes.io/name=options-record", o.GetKind(), o.GetName())
				}
			}
			ws := workloads(t, v.objects)
			for _, w := range ws {
				checkPodSecurity(t, w)
				if !labels.SelectorFromSet(w.selector).Matches(labels.Set(w.template.Labels)) {
					t.Errorf("%s %s: selector %v does not select its pod template %v", w.kind, w.name, w.selector, w.template.Labels)
				}
			}
			sink := slices.IndexFunc(ws, func(w workload) bool { return w.kind == "StatefulSet" && w.name == sinkName })
			if sink < 0 {
				t.Fatal("no StatefulSet options-record")
			}
			checkSink(t, ws[sink], flags)
			checkServices(t, v.objects, ws)
			checkPDBs(t, v.objects, ws)
			checkSecretRefs(t, v.objects, ws)
			checkRBAC(t, v.objects)
		})
	}
}

func isClusterScoped(kind string) bool {
	return kind == "ClusterRole" || kind == "ClusterRoleBinding" || kind == "Namespace" || kind == "CustomResourceDefinition" || kind == "APIService" ||
		kind == "ValidatingWebhookConfiguration" || kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding"
}

// checkPodSecurity holds every workload to the "restricted" Pod Security
// Standard (the namespace enforces it; TestOnRealAPIServer lets the real
// admission plugin judge too) plus read-only root filesystems, resources,
// probes and pinned images.
func checkPodSecurity(t *testing.T, w workload) {
	t.Helper()
	ps := w.template.Spec.SecurityContext
	if ps == nil || !ptrOr(ps.RunAsNonRoot, false) || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s %s: pod securityContext needs runAsNonRoot and seccompProfile RuntimeDefault", w.kind, w.name)
	}
	if ps != nil && ptrOr(ps.RunAsUser, 0) == 0 {
		t.Errorf("%s %s: runAsUser must be set and non-zero", w.kind, w.name)
	}
	if w.template.Spec.HostNetwork || w.template.Spec.HostPID || w.template.Spec.HostIPC {
		t.Errorf("%s %s uses host namespaces", w.kind, w.name)
	}
	for _, c := range append(slices.Clone(w.template.Spec.InitContainers), w.template.Spec.Containers...) {
		where := fmt.Sprintf("%s %s container %s", w.kind, w.name, c.Name)
		sc := c.SecurityContext
		if sc == nil || ptrOr(sc.AllowPrivilegeEscalation, true) || !ptrOr(sc.ReadOnlyRootFilesystem, false) ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: needs allowPrivilegeEscalation false, readOnlyRootFilesystem true, capabilities drop [ALL]", where)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("%s: no %s request", where, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("%s: no %s limit", where, r)
			}
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("%s: needs readiness and liveness probes", where)
		}
		switch {
		case strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":"):
			t.Errorf("%s: image %q has no fixed tag", where, c.Image)
		case !strings.HasPrefix(c.Image, "options-record:") && !strings.HasPrefix(c.Image, releaseImage+":") && !digestRef.MatchString(c.Image):
			t.Errorf("%s: third-party image %q is not pinned by version and digest", where, c.Image)
		}
	}
}

// checkSink checks the sink's StatefulSet against the flags of the binary it
// runs and the requirements.
func checkSink(t *testing.T, w workload, flags map[string]bool) {
	t.Helper()
	if w.replicas != 2 {
		t.Errorf("sink replicas = %d, want 2", w.replicas)
	}
	spec := w.template.Spec
	if spec.ServiceAccountName != sinkName {
		t.Errorf("sink serviceAccountName = %q", spec.ServiceAccountName)
	}
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == sinkContainer })
	if i < 0 {
		t.Fatalf("sink has no container %q", sinkContainer)
	}
	c := spec.Containers[i]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("sink args %q do not start with serve", c.Args)
	}
	args := map[string]string{}
	for _, a := range c.Args[1:] {
		name, val, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") || !flags[name] {
			t.Errorf("sink argument %q is not a flag of `options-record serve`", a)
		}
		args[name] = val
	}
	if _, ok := args["in-cluster"]; !ok {
		t.Error("sink does not run with --in-cluster")
	}
	if args["identity"] != "$(POD_NAME)" {
		t.Errorf("--identity = %q, want $(POD_NAME)", args["identity"])
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Error("POD_NAME is not taken from metadata.name")
	}
	if e := env["OPTIONS_RECORD_DATABASE_URL"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Error("OPTIONS_RECORD_DATABASE_URL does not come from a Secret")
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, port := range map[string]string{"metrics-bind-address": "metrics", "webhook-bind-address": "webhook", "api-bind-address": "api"} {
		addr, ok := args[flag]
		if !ok {
			continue
		}
		_, p, err := net.SplitHostPort(addr)
		if err != nil || p != fmt.Sprint(ports[port]) {
			t.Errorf("--%s=%s does not match container port %q (%d)", flag, addr, port, ports[port])
		}
		if host, _, _ := net.SplitHostPort(addr); host != "" {
			t.Errorf("--%s=%s listens on one address only; probes and Services need the pod IP", flag, addr)
		}
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("metrics") {
			t.Errorf("%s probe: want HTTP GET %s on port metrics", name, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("startup", c.StartupProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")

	// Every file a flag names is on a mounted volume; the data directory is
	// writable (the root filesystem is not).
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, flag := range []string{"tls-cert-file", "tls-key-file", "webhook-token-file", "webhook-client-ca", "webhook-clients-file", "api-tls-cert-file", "api-tls-key-file", "secret-digest-key-file"} {
		if p, ok := args[flag]; ok {
			if _, ok := mounts[filepath.Dir(p)]; !ok {
				t.Errorf("--%s=%s is not in a mounted volume", flag, p)
			}
		}
	}
	if m, ok := mounts[args["data-dir"]]; !ok || m.ReadOnly {
		t.Errorf("--data-dir=%q is not a writable volume", args["data-dir"])
	}
	// Replicas generating their own keys would digest one Secret value
	// differently: the key comes from a Secret they all mount.
	if _, ok := args["secret-digest-key-file"]; !ok {
		t.Error("the sink runs without --secret-digest-key-file: each replica would generate its own key")
	}
	// The journal acknowledges batches the database has not taken yet: it
	// must outlive the pod, so it is on a volume of a volumeClaimTemplate
	// (an emptyDir goes with the pod, and with it what was acknowledged).
	journal, ok := args["journal-dir"]
	if !ok {
		t.Fatal("the sink runs without --journal-dir: a database outage longer than the apiserver's retries loses events")
	}
	m, ok := mountOf(c.VolumeMounts, journal)
	switch {
	case !ok:
		t.Errorf("--journal-dir=%s is not in a mounted volume", journal)
	case m.ReadOnly:
		t.Errorf("--journal-dir=%s is on a read-only mount", journal)
	case !slices.Contains(w.claims, m.Name):
		t.Errorf("--journal-dir=%s is on volume %q, not on a volumeClaimTemplate %v: it would not outlive the pod", journal, m.Name, w.claims)
	}
}

// mountOf returns the mount that holds path (the deepest one).
func mountOf(mounts []corev1.VolumeMount, path string) (corev1.VolumeMount, bool) {
	var best corev1.VolumeMount
	found := false
	for _, m := range mounts {
		if (path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")) &&
			(!found || len(m.MountPath) > len(best.MountPath)) {
			best, found = m, true
		}
	}
	return best, found
}

func checkServices(t *testing.T, objs []*unstructured.Unstructured, ws []workload) {
	t.Helper()
	found := false
	for _, u := range find(objs, "Service", "") {
		s := typed[corev1.Service](t, u)
		found = found || s.Name == webhookService
		var selected []workload
		for _, w := range ws {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(w.template.Labels)) {
				selected = append(selected, w)
			}
		}
		if len(selected) != 1 {
			t.Errorf("Service %s selects %d workloads, want 1", s.Name, len(selected))
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.TargetPort.Type != intstr.String {
				t.Errorf("Service %s port %s: use a named targetPort", s.Name, p.Name)
				continue
			}
			ok := false
			for _, c := range selected[0].template.Spec.Containers {
				for _, cp := range c.Ports {
					ok = ok || cp.Name == p.TargetPort.StrVal
				}
			}
			if !ok {
				t.Errorf("Service %s targets port %q, which %s %s does not expose", s.Name, p.TargetPort.StrVal, selected[0].kind, selected[0].name)
			}
		}
	}
	if !found {
		t.Errorf("no Service %s", webhookService)
	}
}

func checkPDBs(t *testing.T, objs []*unstructured.Unstructured, ws []workload) {
	t.Helper()
	pdbs := find(objs, "PodDisruptionBudget", "")
	if len(pdbs) == 0 {
		t.Error("no PodDisruptionBudget")
	}
	for _, u := range pdbs {
		p := typed[policyv1.PodDisruptionBudget](t, u)
		sel := labels.SelectorFromSet(p.Spec.Selector.MatchLabels)
		n := 0
		for _, w := range ws {
			if sel.Matches(labels.Set(w.template.Labels)) {
				n++
				if p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() >= int(w.replicas) {
					t.Errorf("PodDisruptionBudget %s: minAvailable must leave room to evict one of %d replicas", p.Name, w.replicas)
				}
			}
		}
		if n != 1 {
			t.Errorf("PodDisruptionBudget %s selects %d workloads, want 1", p.Name, n)
		}
	}
}

// checkSecretRefs: every Secret a pod reads is in the build or is one the
// operator is told to create.
func checkSecretRefs(t *testing.T, objs []*unstructured.Unstructured, ws []workload) {
	t.Helper()
	have := map[string]bool{}
	for _, u := range find(objs, "Secret", "") {
		have[u.GetName()] = true
	}
	known := func(name string) bool {
		return have[name] || slices.Contains(operatorSecrets, name) || certManagerSecret(objs, name)
	}
	for _, w := range ws {
		for _, vol := range w.template.Spec.Volumes {
			if vol.Secret != nil && !known(vol.Secret.SecretName) {
				t.Errorf("%s %s mounts unknown Secret %q", w.kind, w.name, vol.Secret.SecretName)
			}
		}
		for _, c := range w.template.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !known(e.ValueFrom.SecretKeyRef.Name) {
					t.Errorf("%s %s reads unknown Secret %q", w.kind, w.name, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
}

func certManagerSecret(objs []*unstructured.Unstructured, name string) bool {
	for _, u := range find(objs, "Certificate", "") {
		if s, _, _ := unstructured.NestedString(u.Object, "spec", "secretName"); s == name {
			return true
		}
	}
	return false
}

// checkRBAC: no watch and no wildcard verbs anywhere, wildcard resources only
// for impersonating user extras, Secrets only in the opt-in baseline role,
// and every binding binds the sink's ServiceAccount to a role of the build.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	roles := map[string]bool{}
	check := func(kind, name string, rules []rbacv1.PolicyRule) {
		roles[kind+"/"+name] = true
		for _, r := range rules {
			for _, verb := range r.Verbs {
				if verb == "watch" || verb == "*" || verb == "deletecollection" || verb == "delete" || verb == "patch" || verb == "escalate" || verb == "bind" {
					t.Errorf("%s %s grants %q", kind, name, verb)
				}
			}
			if slices.Contains(r.Resources, "*") && (!slices.Equal(r.Verbs, []string{"impersonate"}) || !slices.Equal(r.APIGroups, []string{"authentication.k8s.io"})) {
				t.Errorf("%s %s: a wildcard resource is only for impersonating user extras: %+v", kind, name, r)
			}
			if slices.Contains(r.APIGroups, "*") || len(r.NonResourceURLs) > 0 {
				t.Errorf("%s %s: wildcard API group or non-resource URL: %+v", kind, name, r)
			}
			if slices.Contains(r.Resources, "secrets") && name != "options-record-baseline-secrets" {
				t.Errorf("%s %s grants access to Secrets", kind, name)
			}
		}
	}
	for _, u := range find(objs, "ClusterRole", "") {
		r := typed[rbacv1.ClusterRole](t, u)
		check("ClusterRole", r.Name, r.Rules)
	}
	for _, u := range find(objs, "Role", "") {
		r := typed[rbacv1.Role](t, u)
		check("Role", r.Name, r.Rules)
	}
	bind := func(kind, name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		if !roles[ref.Kind+"/"+ref.Name] && !(kind == "RoleBinding" && name == frontProxyReaderBinding) {
			t.Errorf("%s %s refers to %s %s, which the build does not hold", kind, name, ref.Kind, ref.Name)
		}
		for _, s := range subjects {
			if s.Kind != "ServiceAccount" || (s.Name != sinkName && s.Name != apiName) || s.Namespace != sinkNamespace {
				t.Errorf("%s %s binds %+v, not a ServiceAccount of the sink", kind, name, s)
			}
		}
	}
	for _, u := range find(objs, "ClusterRoleBinding", "") {
		b := typed[rbacv1.ClusterRoleBinding](t, u)
		bind("ClusterRoleBinding", b.Name, b.RoleRef, b.Subjects)
	}
	for _, u := range find(objs, "RoleBinding", "") {
		b := typed[rbacv1.RoleBinding](t, u)
		bind("RoleBinding", b.Name, b.RoleRef, b.Subjects)
	}
}

var (
	flagsOnce sync.Once
	flagSet   map[string]bool
	flagsErr  error
)

// buildProduct builds the product binary into dir the way `make build` does.
func buildProduct(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "options-record")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/options-record")
	build.Dir = repoRoot(t)
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveFlags returns the flags `options-record serve -h` lists.
func serveFlags(t testing.TB) map[string]bool {
	t.Helper()
	flagsOnce.Do(func() {
		bin := buildProduct(t, t.TempDir())
		var out bytes.Buffer
		help := exec.Command(bin, "serve", "-h")
		help.Stdout, help.Stderr = &out, &out
		_ = help.Run() // -h exits 0; the usage is what matters
		flagSet = map[string]bool{}
		sc := bufio.NewScanner(&out)
		re := regexp.MustCompile(`^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				flagSet[m[1]] = true
			}
		}
		if !flagSet["webhook-bind-address"] {
			flagsErr = fmt.Errorf("could not read the flags of `options-record serve -h`:\n%s", out.String())
		}
	})
	if flagsErr != nil {
		t.Fatal(flagsErr)
	}
	return flagSet
}

// frontProxyReaderBinding (components/aggregated-api) lets the API pods GET
// kube-system/extension-apiserver-authentication (the front-proxy CA) with
// the Role every cluster has for it: the one object of the install outside
// its namespace, bound to a Role the build does not hold.
const frontProxyReaderBinding = "options-record-api:extension-apiserver-authentication-reader"

func isFrontProxyReader(o *unstructured.Unstructured) bool {
	return o.GetKind() == "RoleBinding" && o.GetName() == frontProxyReaderBinding && o.GetNamespace() == "kube-system"
}
