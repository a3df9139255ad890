package chart

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMountedFilesAreReadable: every Secret and ConfigMap a workload of
// the chart or of deploy/ mounts can be read by the user its container
// runs as. The kubelet writes such a volume's files owned by root, in the
// group of the pod's fsGroup (root without one), with the volume's mode:
// a container running as 65532 reads a 0440 file only through fsGroup.
// No kubelet runs here, so the rule is checked on the manifests.
func TestMountedFilesAreReadable(t *testing.T) {
	c := loadChart(t)
	renders := map[string][]*unstructured.Unstructured{}
	for _, p := range pairings() {
		renders["chart "+p.name] = renderChart(t, c, p.values).objects
		renders["deploy/ "+p.name] = renderKustomize(t, p.base, p.components...)
	}
	renders["chart scheduled verify"] = renderChart(t, c, verifyValues(map[string]any{"verifierKey": verifierKey})).objects
	for name, objs := range renders {
		canonical(t, objs) // numbers as JSON gives them (NestedMap copies by JSON's types)
		for _, u := range objs {
			switch u.GetKind() {
			case "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob":
			default:
				continue
			}
			for _, problem := range unreadableMounts(podSpec(t, u)) {
				t.Errorf("%s: %s: %s", name, key(u), problem)
			}
		}
	}
}

// unreadableMounts lists the mounted Secret and ConfigMap volumes of a pod
// spec that a container cannot read.
func unreadableMounts(spec map[string]any) []string {
	podSC, _ := spec["securityContext"].(map[string]any)
	fsGroup, hasFSGroup := intField(podSC, "fsGroup")
	modes := map[string]int64{} // volume name: the mode of its files
	for _, v := range asSlice(spec["volumes"]) {
		vol, _ := v.(map[string]any)
		name, _ := vol["name"].(string)
		for _, kind := range []string{"secret", "configMap", "projected"} {
			src, ok := vol[kind].(map[string]any)
			if !ok {
				continue
			}
			mode, ok := intField(src, "defaultMode")
			if !ok {
				mode = 0o644
			}
			for _, it := range asSlice(src["items"]) {
				if m, ok := intField(it.(map[string]any), "mode"); ok {
					mode = min(mode, m) // any item's stricter mode
				}
			}
			modes[name] = mode
		}
	}
	var out []string
	for _, field := range []string{"initContainers", "containers"} {
		for _, ct := range asSlice(spec[field]) {
			ctr, _ := ct.(map[string]any)
			sc, _ := ctr["securityContext"].(map[string]any)
			uid, ok := intField(sc, "runAsUser")
			if !ok {
				uid, ok = intField(podSC, "runAsUser")
			}
			if !ok {
				uid = -1 // the image's user: not root (runAsNonRoot) in this repo
			}
			gid, ok := intField(sc, "runAsGroup")
			if !ok {
				gid, _ = intField(podSC, "runAsGroup")
			}
			groups := []int64{gid}
			for _, g := range asSlice(podSC["supplementalGroups"]) {
				if n, ok := g.(int64); ok {
					groups = append(groups, n)
				}
			}
			fileGroup := int64(0)
			if hasFSGroup {
				fileGroup = fsGroup
				groups = append(groups, fsGroup)
			}
			for _, m := range asSlice(ctr["volumeMounts"]) {
				vm, _ := m.(map[string]any)
				vname, _ := vm["name"].(string)
				mode, ok := modes[vname]
				if !ok {
					continue
				}
				readable := uid == 0 || mode&0o004 != 0 || (mode&0o040 != 0 && slices.Contains(groups, fileGroup))
				if !readable {
					out = append(out, fmt.Sprintf("container %v cannot read volume %s (mode %#o, files root:%d; runs as %d:%d, fsGroup set: %v)",
						ctr["name"], vname, mode, fileGroup, uid, gid, hasFSGroup))
				}
			}
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// intField reads a whole number however the decoder typed it.
func intField(m map[string]any, name string) (int64, bool) {
	switch n := m[name].(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}
