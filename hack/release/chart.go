package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// ChartDir is the Helm chart, relative to the repository's root.
const ChartDir = "deploy/charts/options-record"

// chartVersion is the chart's SemVer for a release vX.Y.Z: X.Y.Z.
func chartVersion(version string) string { return strings.TrimPrefix(version, "v") }

// packageChart packages the chart as `helm package` does (Helm's
// chartutil.Save) into out/options-record-X.Y.Z.tgz, stamped for the
// release: version X.Y.Z, appVersion vX.Y.Z, and in values.yaml
// image.repository repo and image.digest digest, so that its default
// values install the image by tag and digest, as install.yaml does. Every
// file is dated created (Helm dates them by the clock), so the same commit
// gives the same archive. It then loads the archive back, renders it with
// its defaults as `helm template` does, and checks every image is pinned.
func packageChart(root, out, repo, version, digest string, created time.Time) (string, error) {
	c, err := loader.LoadDir(filepath.Join(root, ChartDir))
	if err != nil {
		return "", fmt.Errorf("load %s: %w", ChartDir, err)
	}
	c.Metadata.Version = chartVersion(version)
	c.Metadata.AppVersion = version
	if err := stampValues(c, repo, digest); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "options-record-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	saved, err := chartutil.Save(c, tmp)
	if err != nil {
		return "", fmt.Errorf("package %s: %w", ChartDir, err)
	}
	dst := filepath.Join(out, filepath.Base(saved))
	if err := redate(saved, dst, created); err != nil {
		return "", err
	}
	if err := checkChart(dst, repo, version, digest); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(dst), err)
	}
	return dst, nil
}

// stampValues sets image.repository and image.digest in the chart's
// values.yaml and in its parsed values. The packaged values.yaml is the
// file, not the parsed values: the two lines are rewritten in place so the
// file keeps its comments and layout (a YAML encoder would not), and the
// result is parsed back and checked.
func stampValues(c *chart.Chart, repo, digest string) error {
	for _, f := range c.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		block := regexp.MustCompile(`(?m)^image:\n(?:[ #].*\n|\n)*`).FindIndex(f.Data)
		if block == nil {
			return fmt.Errorf("%s/values.yaml: no image: block", ChartDir)
		}
		img := f.Data[block[0]:block[1]]
		for field, value := range map[string]string{"repository": repo, "digest": digest} {
			re := regexp.MustCompile(`(?m)^  ` + field + `:.*$`)
			if len(re.FindAll(img, -1)) != 1 {
				return fmt.Errorf("%s/values.yaml: want one image.%s line", ChartDir, field)
			}
			img = re.ReplaceAllLiteral(img, fmt.Appendf(nil, "  %s: %q", field, value))
		}
		data := slices.Concat(f.Data[:block[0]], img, f.Data[block[1]:])
		vals, err := chartutil.ReadValues(data)
		if err != nil {
			return fmt.Errorf("%s/values.yaml stamped: %w", ChartDir, err)
		}
		if got, _ := vals["image"].(map[string]any); got["repository"] != repo || got["digest"] != digest {
			return fmt.Errorf("%s/values.yaml stamped: image %v", ChartDir, got)
		}
		f.Data, c.Values = data, vals
		return nil
	}
	return fmt.Errorf("%s has no values.yaml", ChartDir)
}

// redate copies the gzip'd tar src to dst with every entry dated created.
func redate(src, dst string, created time.Time) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Header = zr.Header // Helm's marker, without a time
	zw.Header.ModTime = time.Time{}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = created, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// checkChart loads the packaged chart with Helm's loader and checks its
// version, appVersion and image values are the release's, and that,
// rendered with its defaults (`helm template --include-crds`), every
// container runs the release image pinned by tag and digest.
func checkChart(path, repo, version, digest string) error {
	c, err := loader.Load(path)
	if err != nil {
		return err
	}
	if c.Metadata.Version != chartVersion(version) || c.Metadata.AppVersion != version {
		return fmt.Errorf("version %q, appVersion %q; want %q, %q", c.Metadata.Version, c.Metadata.AppVersion, chartVersion(version), version)
	}
	img, _ := c.Values["image"].(map[string]any)
	if img["repository"] != repo || img["digest"] != digest {
		return fmt.Errorf("values image.repository %v, image.digest %v; want %s, %s", img["repository"], img["digest"], repo, digest)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace = "options-record", "options-record"
	rel, err := install.Run(c, nil)
	if err != nil {
		return fmt.Errorf("helm template: %w", err)
	}
	return checkPinned([]byte(rel.Manifest), repo, repo+":"+version+"@"+digest)
}
