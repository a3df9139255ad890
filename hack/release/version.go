package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// ImageComponent is the one place deploy/ names the image and its tag.
const ImageComponent = "deploy/components/image/kustomization.yaml"

// checkSourceVersion: the tree being released names version where a user
// of a checkout of the tag reads it: the chart's version and appVersion
// (Chart.yaml) and the image's newTag (ImageComponent). The release's own
// artefacts are stamped by this program whatever the tree says; the check
// is that the tag's tree agrees (docs/development.md, Cutting a release).
func checkSourceVersion(root, version string) error {
	var errs []error
	meta, err := chartutil.LoadChartfile(filepath.Join(root, ChartDir, chartutil.ChartfileName))
	if err != nil {
		return err
	}
	if meta.Version != chartVersion(version) {
		errs = append(errs, fmt.Errorf("%s/Chart.yaml: version %s, want %s", ChartDir, meta.Version, chartVersion(version)))
	}
	if meta.AppVersion != version {
		errs = append(errs, fmt.Errorf("%s/Chart.yaml: appVersion %s, want %s", ChartDir, meta.AppVersion, version))
	}
	data, err := os.ReadFile(filepath.Join(root, ImageComponent))
	if err != nil {
		return err
	}
	var k struct {
		Images []struct{ Name, NewName, NewTag string }
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", ImageComponent, err)
	}
	if len(k.Images) != 1 {
		errs = append(errs, fmt.Errorf("%s: %d images, want one", ImageComponent, len(k.Images)))
	}
	for _, img := range k.Images {
		if img.NewTag != version {
			errs = append(errs, fmt.Errorf("%s: %s newTag %s, want %s", ImageComponent, img.Name, img.NewTag, version))
		}
	}
	if len(errs) > 0 {
		errs = append(errs, fmt.Errorf("bump them to %s and commit before tagging (docs/development.md, Cutting a release)", version))
	}
	return errors.Join(errs...)
}
