package main

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// checkPinned is the check that ships install.yaml and the packaged chart:
// in every document of the YAML stream y, every container, init container
// and ephemeral container, wherever its pod spec sits (a Pod, a workload's
// template, a CronJob's job template), runs either the release image
// exactly as pinned (repo:tag@digest) or, for another repository (the demo
// PostgreSQL), an image named by digest. At least one runs the release.
func checkPinned(y []byte, repo, pinned string) error {
	docs, err := kio.FromBytes(y)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var errs []error
	release := 0
	for _, doc := range docs {
		m, err := doc.Map()
		if err != nil {
			return fmt.Errorf("parse %s %s: %w", doc.GetKind(), doc.GetName(), err)
		}
		where := doc.GetKind() + " " + doc.GetName()
		walkContainers(m, "", func(at, image string) {
			switch {
			case image == pinned:
				release++
			case repository(image) == repo:
				errs = append(errs, fmt.Errorf("%s %s: image %q, want %s", where, at, image, pinned))
			case !strings.Contains(image, "@sha256:"):
				errs = append(errs, fmt.Errorf("%s %s: image %q is not named by digest", where, at, image))
			}
		})
	}
	if release == 0 {
		errs = append(errs, fmt.Errorf("no container runs %s", pinned))
	}
	return errors.Join(errs...)
}

// walkContainers calls f with every image of a containers, initContainers
// or ephemeralContainers list anywhere in v, and the path to it.
func walkContainers(v any, at string, f func(at, image string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "containers", "initContainers", "ephemeralContainers":
				if list, ok := sub.([]any); ok {
					for i, c := range list {
						if c, ok := c.(map[string]any); ok {
							image, _ := c["image"].(string)
							f(fmt.Sprintf("%s.%s[%d]", at, k, i), image)
						}
					}
					continue
				}
			}
			walkContainers(sub, at+"."+k, f)
		}
	case []any:
		for i, sub := range v {
			walkContainers(sub, fmt.Sprintf("%s[%d]", at, i), f)
		}
	}
}

// repository is an image reference without its digest and tag.
func repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}
