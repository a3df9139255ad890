// Command release builds the artefacts of an Options Record release that
// need more than a shell (make release runs it after hack/plugin/build.sh):
//
//	OUT/image/                          the sink's image, an OCI layout holding one
//	                                    multi-arch index (linux/amd64, linux/arm64)
//	OUT/options-record_VERSION_image.oci.tar   the same layout as one file
//	OUT/image.txt                       REPOSITORY:VERSION@sha256:... of the index
//	OUT/install.yaml                    deploy/ rendered by kustomize, the image
//	                                    pinned by tag and digest
//	OUT/options-record-X.Y.Z.tgz        the Helm chart, packaged with Helm's SDK:
//	                                    version X.Y.Z, appVersion vX.Y.Z, its
//	                                    image.digest the index's (chart.go)
//	OUT/SHA256SUMS                      sha256 of every file in OUT (sha256sum -c)
//
// The image is built without a Docker daemon, from scratch, as the
// Dockerfile's distroless "static" nonroot base would give it: the static
// binary (CGO_ENABLED=0, the Makefile's version stamps) at /options-record,
// the licence at /LICENSE, Mozilla's CA certificates (golang.org/x/crypto's
// x509roots bundle, pinned in go.sum) at /etc/ssl/certs/ca-certificates.crt,
// /etc/passwd and /etc/group with the nonroot user 65532, /tmp and
// /home/nonroot; user 65532:65532, entrypoint ["/options-record"], command
// ["serve"], and the OCI labels (version, revision, licenses, source). Every
// file is dated by the commit, so the same commit gives the same digest.
// test/shipcheck checks the image against the Dockerfile.
//
// With -check-version it only checks that the tree names -version where a
// checkout's user reads it (version.go) and exits: make release runs that
// first.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Source is the project's repository, named in the image's labels.
const Source = "https://github.com/options-record/options-record"

// The nonroot user of distroless, which the Dockerfile's base provides.
const (
	UID  = 65532
	User = "65532:65532"
)

// Entrypoint and Cmd are the Dockerfile's ENTRYPOINT and CMD.
var (
	Entrypoint   = []string{"/options-record"}
	Cmd          = []string{"serve"}
	ExposedPorts = []string{"8443/tcp", "8444/tcp", "9090/tcp"}
)

type config struct {
	root, out, version, commit, date, ldflags, image string
	platforms                                        []string
}

func main() {
	var c config
	var platforms string
	flag.StringVar(&c.root, "root", "../..", "the repository's root")
	flag.StringVar(&c.out, "out", "_output/release", "where to write the artefacts")
	flag.StringVar(&c.version, "version", "", "the release, vX.Y.Z (the Makefile's VERSION)")
	flag.StringVar(&c.commit, "commit", "", "the commit (the Makefile's COMMIT)")
	flag.StringVar(&c.date, "date", "", "the commit's date, RFC 3339 (the Makefile's BUILD_DATE): every file's time")
	flag.StringVar(&c.ldflags, "ldflags", "", "the version stamps (the Makefile's VERSION_LDFLAGS)")
	flag.StringVar(&c.image, "image", "ghcr.io/options-record/options-record", "the image's repository")
	flag.StringVar(&platforms, "platforms", "linux/amd64 linux/arm64", "the image's platforms")
	checkVersion := flag.Bool("check-version", false, "only check that the tree's chart and deploy/components/image name -version, and exit")
	flag.Parse()
	if *checkVersion {
		if err := checkSourceVersion(c.root, c.version); err != nil {
			fmt.Fprintln(os.Stderr, "release: the tree does not name", c.version+":\n"+err.Error())
			os.Exit(1)
		}
		return
	}
	c.platforms = strings.Fields(strings.ReplaceAll(platforms, ",", " "))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func run(c config) error {
	if !semver.MatchString(c.version) {
		return fmt.Errorf("-version %q is not a semver tag (vX.Y.Z)", c.version)
	}
	if len(c.platforms) == 0 {
		return errors.New("no -platforms")
	}
	created := time.Unix(0, 0).UTC()
	if c.date != "" {
		t, err := time.Parse(time.RFC3339, c.date)
		if err != nil {
			return fmt.Errorf("-date: %w", err)
		}
		created = t.UTC()
	}
	root, err := filepath.Abs(c.root)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(c.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	licence, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return err
	}
	base, err := baseLayer(created)
	if err != nil {
		return err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "options-record",
		"org.opencontainers.image.description": "Records who changed or deleted Kubernetes objects, with their prior state, from the kube-apiserver's audit webhook",
		"org.opencontainers.image.version":     c.version,
		"org.opencontainers.image.revision":    c.commit,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range c.platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return err
		}
		if plat.OS != "linux" {
			return fmt.Errorf("platform %s: the image is linux only", p)
		}
		if plat.Architecture == "arm64" && plat.Variant == "" {
			plat.Variant = "v8"
		}
		bin, err := buildSink(root, plat, c.ldflags)
		if err != nil {
			return err
		}
		app, err := layerOf(created, []file{
			{name: "LICENSE", mode: 0o644, data: licence},
			{name: "options-record", mode: 0o755, data: bin},
		})
		if err != nil {
			return err
		}
		img, err := image(base, app, plat, created, labels)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	ref := c.image + ":" + c.version + "@" + digest.String()

	dir := filepath.Join(out, "image")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": c.version,
		"io.containerd.image.name":          c.image + ":" + c.version,
	})); err != nil {
		return err
	}
	if err := tarDir(dir, filepath.Join(out, "options-record_"+c.version+"_image.oci.tar"), created); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "image.txt"), []byte(ref+"\n"), 0o644); err != nil {
		return err
	}
	install, err := renderInstall(root, c.image, c.version, digest.String())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "install.yaml"), install, 0o644); err != nil {
		return err
	}
	chart, err := packageChart(root, out, c.image, c.version, digest.String(), created)
	if err != nil {
		return err
	}
	fmt.Println("release: chart", filepath.Base(chart))
	if err := checksums(out); err != nil {
		return err
	}
	fmt.Println("release:", ref)
	return nil
}

// buildSink builds cmd/options-record for plat as `make build` does: static,
// without local paths, with the version stamps.
func buildSink(root string, plat *v1.Platform, ldflags string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "options-record-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "options-record")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/options-record")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture,
		"GOFLAGS=-mod=readonly", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "release: go build ./cmd/options-record for %s\n", plat)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", plat, err)
	}
	return os.ReadFile(bin)
}

type file struct {
	name     string // without a leading slash; a directory ends in /
	mode     int64
	uid, gid int
	data     []byte
}

// baseLayer is what the distroless static nonroot base gives the
// Dockerfile's image and the sink needs: CA certificates, the users, /tmp
// and the nonroot user's home.
func baseLayer(created time.Time) (v1.Layer, error) {
	var certs bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue // a distrust date a PEM file cannot carry
		}
		if err := pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if certs.Len() == 0 {
		return nil, errors.New("no CA certificates in the bundle")
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnobody:x:65534:\nnonroot:x:%d:\n", UID)
	return layerOf(created, []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs.Bytes()},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: UID},
		{name: "tmp/", mode: 0o1777},
	})
}

// layerOf is an uncompressed tar of files, in name order, dated created,
// as a gzip-compressed layer.
func layerOf(created time.Time, files []file) (v1.Layer, error) {
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: created, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

func image(base, app v1.Layer, plat *v1.Platform, created time.Time, labels map[string]string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/release: CA certificates, users, /tmp", Comment: "distroless static nonroot equivalent"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/release: /options-record, /LICENSE"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	ports := map[string]struct{}{}
	for _, p := range ExposedPorts {
		ports[p] = struct{}{}
	}
	cf.Config = v1.Config{
		User:         User,
		Entrypoint:   Entrypoint,
		Cmd:          Cmd,
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: ports,
		Labels:       labels,
	}
	return mutate.ConfigFile(img, cf)
}

// renderInstall renders deploy/ (the default install the README applies)
// with kustomize, the image pinned by tag and digest.
func renderInstall(root, repo, tag, digest string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "options-record-install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rel, err := filepath.Rel(tmp, filepath.Join(root, "deploy"))
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    newTag: %s
    digest: %s
`, filepath.ToSlash(rel), repo, tag, digest)
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), tmp)
	if err != nil {
		return nil, fmt.Errorf("kustomize deploy/: %w", err)
	}
	y, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	pinned := repo + ":" + tag + "@" + digest
	if err := checkPinned(y, repo, pinned); err != nil {
		return nil, fmt.Errorf("install.yaml: %w", err)
	}
	head := fmt.Sprintf(`# Options Record %s: the default install (kubectl kustomize deploy/), the image
# pinned by tag and digest: %s
# Create the Secrets it reads first (deploy/README.md), then
#   kubectl apply --server-side -f install.yaml
# Uninstall: delete the APIService v1alpha1.record.optionsrecord.io first, if
# you installed it (README.md, Uninstall).
`, tag, pinned)
	return append([]byte(head), y...), nil
}

// tarDir writes the directory dir as a tar file, in name order, dated
// created, owned by 0:0.
func tarDir(dir, dst string, created time.Time) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	}); err != nil {
		return err
	}
	slices.Sort(names)
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range names {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: created, Mode: 0o644, Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// checksums writes SHA256SUMS: every regular file of out, in name order,
// in sha256sum's format.
func checksums(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "SHA256SUMS" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), e.Name())
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}
