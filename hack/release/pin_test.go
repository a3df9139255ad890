package main

import (
	"strings"
	"testing"
)

const (
	testRepo   = "ghcr.io/options-record/options-record"
	testPinned = testRepo + ":v0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// TestCheckPinned: install.yaml (and the packaged chart's rendering) ships
// only if every container of every document, init containers too, runs the
// release image by tag and digest, and any other image is named by digest.
func TestCheckPinned(t *testing.T) {
	pod := func(containers ...string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  template:\n    spec:\n" + strings.Join(containers, "")
	}
	c := func(field, image string) string {
		return "      " + field + ":\n        - name: c\n          image: " + image + "\n"
	}
	ok := pod(c("containers", testPinned), c("initContainers", testPinned))
	postgres := "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: pg}\nspec:\n  template:\n    spec:\n" +
		c("containers", "postgres:17.6@sha256:00bc86618629af00d2937fdc5a5d63db3ff8450acf52f0636ec813c7f4902929")
	cron := "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: j}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n            - name: j\n              image: %s\n"
	for name, tc := range map[string]struct {
		y    string
		fail string
	}{
		"all pinned":                {y: ok + postgres},
		"a second container by tag": {y: pod(c("containers", testPinned+"\n        - name: d\n          image: "+testRepo+":v0.1.0")), fail: testRepo + ":v0.1.0"},
		"an init container by tag":  {y: pod(c("containers", testPinned), c("initContainers", testRepo+":v0.1.0")), fail: "initContainers"},
		"the unreplaced name":       {y: ok + "---\n" + pod(c("containers", "options-record")), fail: `"options-record"`},
		"another digest":            {y: pod(c("containers", testRepo+":v0.1.0@sha256:"+strings.Repeat("f", 64))), fail: "sha256:fff"},
		"a foreign image by tag":    {y: ok + "---\n" + pod(c("containers", "busybox:1.36")), fail: "busybox:1.36"},
		"a CronJob by tag":          {y: ok + strings.Replace(cron, "%s", testRepo+":v0.1.0", 1), fail: "CronJob"},
		"a CronJob pinned":          {y: ok + strings.Replace(cron, "%s", testPinned, 1)},
		"no release image":          {y: postgres, fail: "no container"},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkPinned([]byte(tc.y), testRepo, testPinned)
			switch {
			case tc.fail == "" && err != nil:
				t.Fatalf("checkPinned: %v", err)
			case tc.fail != "" && err == nil:
				t.Fatalf("checkPinned passed a manifest with %s unpinned", tc.fail)
			case tc.fail != "" && !strings.Contains(err.Error(), tc.fail):
				t.Fatalf("checkPinned: %v; want it to name %s", err, tc.fail)
			}
		})
	}
}
