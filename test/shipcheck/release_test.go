package shipcheck

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// releaseVersion is what the test's release is called: no default could
// produce it.
const releaseVersion = "v0.1.0-shipcheck.1"

// releaseChart is the packaged Helm chart: its version is the release's
// without the v.
const releaseChart = "options-record-0.1.0-shipcheck.1.tgz"

// TestRelease runs `make release` into a temporary directory (the sink's
// image and the plugin for this machine only, to stay quick; the default
// platforms are checked in the Makefile) and checks what it wrote:
// SHA256SUMS covers every artefact; the OCI layout holds one index of an
// image per platform asked for, whose configuration (user, entrypoint,
// command, ports, OCI labels) and files (the static binary of the
// platform, the licence, CA certificates, the nonroot user) are as
// released, the binary printing the release's version; the Dockerfile
// builds the same (entrypoint, command, user, ports, files); install.yaml,
// every image pinned by tag and digest, applies server-side to the real
// kube-apiserver; and the packaged chart says the release's version and
// digest. First, a release whose VERSION the tree does not name is
// refused (RELEASE_SNAPSHOT=1 lets the test's own through).
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release")
	}
	root := repoRoot(t)
	// A release is linux/amd64 and linux/arm64; the test builds the image
	// of this machine's architecture only (a cold cross-build of the
	// other takes minutes on a 2-core CI machine), through the same code,
	// unless OPTIONS_RECORD_RELEASE_PLATFORMS names more.
	releasePlatforms(t, root)
	platforms := cmp.Or(os.Getenv("OPTIONS_RECORD_RELEASE_PLATFORMS"), "linux/"+runtime.GOARCH)
	out := t.TempDir()
	// A tag whose tree names another version is refused before anything
	// is built, and nothing is written.
	stale := exec.Command("make", "--no-print-directory", "release", "VERSION=v0.0.1", "RELEASE_OUT="+out)
	stale.Dir = root
	if b, err := stale.CombinedOutput(); err == nil || !strings.Contains(string(b), "deploy/charts/options-record/Chart.yaml: appVersion") ||
		!strings.Contains(string(b), "deploy/components/image/kustomization.yaml") {
		t.Errorf("make release VERSION=v0.0.1 on a tree that names another version: %v\n%s", err, b)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("the refused release wrote %d files", len(entries))
	}
	// A snapshot: the tree names the real release, not releaseVersion.
	mk := exec.Command("make", "--no-print-directory", "release", "VERSION="+releaseVersion, "RELEASE_OUT="+out, "RELEASE_SNAPSHOT=1",
		"PLUGIN_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "RELEASE_PLATFORMS="+platforms)
	mk.Dir = root
	if b, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, b)
	}

	t.Run("checksums", func(t *testing.T) { checkSums(t, out) })
	imgs := t.Run("image", func(t *testing.T) { checkReleaseImage(t, root, out, strings.Fields(platforms)) })
	if imgs {
		t.Run("dockerfile-agrees", func(t *testing.T) { checkDockerfileAgrees(t, out) })
	}
	t.Run("install.yaml", func(t *testing.T) { checkInstallYAML(t, out) })
	t.Run("chart", func(t *testing.T) { checkReleaseChart(t, out) })
}

// checkReleaseChart: the packaged chart says the release's version and
// appVersion, and its values.yaml names the release's image by digest, so
// that `helm install` of it runs the image install.yaml pins. (hack/release
// loads it back with Helm's loader and renders it, checking every
// container; test/shipcheck does not take Helm's modules.)
func checkReleaseChart(t *testing.T, out string) {
	f, err := os.Open(filepath.Join(out, releaseChart))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	var meta struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(files["options-record/Chart.yaml"], &meta); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if meta.Version != strings.TrimPrefix(releaseVersion, "v") || meta.AppVersion != releaseVersion {
		t.Errorf("the chart's version %q, appVersion %q; want %q, %q", meta.Version, meta.AppVersion, strings.TrimPrefix(releaseVersion, "v"), releaseVersion)
	}
	var vals struct {
		Image struct{ Repository, Tag, Digest string }
	}
	if err := yaml.Unmarshal(files["options-record/values.yaml"], &vals); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	_, digest := releaseIndex(t, out)
	if vals.Image.Repository != releaseImage || vals.Image.Tag != "" || vals.Image.Digest != digest.String() {
		t.Errorf("the chart's image values %+v; want repository %s, tag empty (the appVersion), digest %s", vals.Image, releaseImage, digest)
	}
	if len(files) < 10 || files["options-record/templates/statefulset.yaml"] == nil {
		t.Errorf("the chart holds %d files, no templates/statefulset.yaml", len(files))
	}
}

// releasePlatforms: make release's default platforms are linux/amd64 and
// linux/arm64.
func releasePlatforms(t *testing.T, root string) {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "hack", "make", "release.mk"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RELEASE_PLATFORMS\s*\?=\s*(.*)$`).FindSubmatch(mk)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("hack/make/release.mk: RELEASE_PLATFORMS defaults to %q, want linux/amd64 linux/arm64", m)
	}
}

func checkSums(t *testing.T, out string) {
	data, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		listed[name] = sum
	}
	want := []string{"install.yaml", "image.txt", "record.yaml", "options-record_" + releaseVersion + "_image.oci.tar",
		"kubectl-record_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz", releaseChart}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("artefact %s: %v", name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if listed[name] != hex.EncodeToString(sum[:]) {
			t.Errorf("SHA256SUMS says %s is %q, it is %x", name, listed[name], sum)
		}
	}
}

// releaseIndex loads the layout's one image index.
func releaseIndex(t *testing.T, out string) (v1.ImageIndex, v1.Hash) {
	t.Helper()
	lp, err := layout.FromPath(filepath.Join(out, "image"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != releaseVersion {
		t.Fatalf("the layout's index.json: %+v; want one image index named %s", m.Manifests, releaseVersion)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx, m.Manifests[0].Digest
}

// imageFiles reads every regular file and directory of img's layers.
func imageFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := "/" + strings.TrimSuffix(path.Clean(h.Name), "/")
			files[name] = h
		}
		rc.Close()
	}
	return files
}

// readFile returns one file's contents from img's layers.
func readFile(t *testing.T, img v1.Image, name string) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if "/"+path.Clean(h.Name) == name {
				if data, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		rc.Close()
	}
	if data == nil {
		t.Fatalf("no %s in the image", name)
	}
	return data
}

func checkReleaseImage(t *testing.T, root, out string, want []string) {
	idx, digest := releaseIndex(t, out)
	ref, err := os.ReadFile(filepath.Join(out, "image.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := releaseImage + ":" + releaseVersion + "@" + digest.String() + "\n"; string(ref) != want {
		t.Errorf("image.txt = %q, want %q", ref, want)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.String())
	}
	for i, p := range want {
		if p == "linux/arm64" {
			want[i] = "linux/arm64/v8"
		}
	}
	slices.Sort(platforms)
	slices.Sort(want)
	if !slices.Equal(platforms, want) {
		t.Fatalf("the index's platforms: %v, want %v", platforms, want)
	}
	licence, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		where := d.Platform.String()
		c := cf.Config
		if cf.OS != "linux" || cf.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s/%s", where, cf.OS, cf.Architecture)
		}
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/options-record"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
			t.Errorf("%s: user %q entrypoint %q cmd %q; want 65532:65532, [/options-record], [serve]", where, c.User, c.Entrypoint, c.Cmd)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.version":  releaseVersion,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://github.com/options-record/options-record",
		} {
			if c.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", where, k, c.Labels[k], v)
			}
		}
		if rev := c.Labels["org.opencontainers.image.revision"]; len(rev) != 40 {
			t.Errorf("%s: label revision %q is not a commit", where, rev)
		}
		files := imageFiles(t, img)
		for name, mode := range map[string]int64{"/options-record": 0o755, "/LICENSE": 0o644, "/etc/ssl/certs/ca-certificates.crt": 0o644, "/etc/passwd": 0o644} {
			h, ok := files[name]
			if !ok || h.Typeflag != tar.TypeReg || h.Mode != mode {
				t.Errorf("%s: %s missing or not a %o file: %+v", where, name, mode, h)
			}
		}
		if !bytes.Equal(readFile(t, img, "/LICENSE"), licence) {
			t.Errorf("%s: /LICENSE is not the repository's LICENSE", where)
		}
		if !strings.Contains(string(readFile(t, img, "/etc/passwd")), ":65532:65532:") {
			t.Errorf("%s: /etc/passwd has no user 65532", where)
		}
		pemData, n := readFile(t, img, "/etc/ssl/certs/ca-certificates.crt"), 0
		for {
			var b *pem.Block
			if b, pemData = pem.Decode(pemData); b == nil {
				break
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				t.Fatalf("%s: a CA certificate does not parse: %v", where, err)
			}
			n++
		}
		if n < 100 {
			t.Errorf("%s: %d CA certificates, want the Mozilla set", where, n)
		}
		bin := filepath.Join(t.TempDir(), "options-record")
		if err := os.WriteFile(bin, readFile(t, img, "/options-record"), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: /options-record: %v", where, err)
		}
		static := f.Machine == machine[d.Platform.Architecture] && !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if !static {
			t.Errorf("%s: /options-record is not a static %s binary", where, machine[d.Platform.Architecture])
		}
		if d.Platform.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
			continue
		}
		vout, err := exec.Command(bin, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("%s: options-record version: %v", where, err)
		}
		var v struct{ GitVersion, GitCommit string }
		if err := json.Unmarshal(vout, &v); err != nil || v.GitVersion != releaseVersion || v.GitCommit != c.Labels["org.opencontainers.image.revision"] {
			t.Errorf("%s: the image's binary says %s (%v); want %s, commit %s", where, vout, err, releaseVersion, c.Labels["org.opencontainers.image.revision"])
		}
	}
}

// checkDockerfileAgrees: the Dockerfile's runtime stage and the release
// image have the same entrypoint, command, user and ports, and the files
// the Dockerfile copies, and those its distroless base provides that the
// sink uses, are in the release image.
func checkDockerfileAgrees(t *testing.T, out string) {
	_, stages := dockerfile(t)
	final := stages[len(stages)-1]
	var (
		user        string
		entry, cmd  []string
		ports, dsts []string
	)
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entry = c.CmdLine
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		case *instructions.ExposeCommand:
			ports = append(ports, c.Ports...)
		case *instructions.CopyCommand:
			dsts = append(dsts, c.DestPath)
		}
	}
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") || !strings.Contains(final.BaseName, ":nonroot@") {
		t.Fatalf("runtime base %s: the release image stands in for distroless static nonroot; update this check and hack/release together", final.BaseName)
	}
	idx, _ := releaseIndex(t, out)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != user || !slices.Equal(c.Entrypoint, entry) || !slices.Equal(c.Cmd, cmd) {
		t.Errorf("the Dockerfile runs %q %q as %q; the release image %q %q as %q", entry, cmd, user, c.Entrypoint, c.Cmd, c.User)
	}
	exposed := sets.New[string]()
	for _, p := range ports {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		exposed.Insert(p)
	}
	if got := sets.KeySet(c.ExposedPorts); !got.Equal(exposed) {
		t.Errorf("the Dockerfile exposes %v, the release image %v", sets.List(exposed), sets.List(got))
	}
	files := imageFiles(t, img)
	// What distroless static nonroot gives the Dockerfile's image and the
	// sink reads: CA certificates (TLS to PostgreSQL and the apiserver),
	// the users, a writable /tmp, the nonroot home.
	want := append([]string{"/etc/ssl/certs/ca-certificates.crt", "/etc/passwd", "/etc/group", "/tmp", "/home/nonroot"}, dsts...)
	for _, name := range want {
		if _, ok := files[path.Clean(name)]; !ok {
			t.Errorf("the Dockerfile's image has %s, the release image does not", name)
		}
	}
	if len(dsts) < 2 {
		t.Errorf("the Dockerfile's runtime stage copies %v; want the binary and the licence", dsts)
	}
}

// checkInstallYAML: install.yaml names the release image by tag and digest
// and applies server-side (the CRD and namespace for real, every object as
// a server-side dry run with strict validation) to the real kube-apiserver.
func checkInstallYAML(t *testing.T, out string) {
	ref, err := os.ReadFile(filepath.Join(out, "image.txt"))
	if err != nil {
		t.Fatal(err)
	}
	objs := readYAML(t, filepath.Join(out, "install.yaml"))
	wl := workloads(t, objs)
	if len(wl) < 2 {
		t.Fatalf("install.yaml has %d workloads, want ingest and the API", len(wl))
	}
	for _, w := range wl {
		for _, c := range slices.Concat(w.template.Spec.InitContainers, w.template.Spec.Containers) {
			if c.Image != strings.TrimSpace(string(ref)) {
				t.Errorf("%s %s: image %q, want %s", w.kind, w.name, c.Image, ref)
			}
		}
	}
	// And every image: line, whatever object it is in.
	install, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^[\s-]*image:\s*(.*)$`).FindAllSubmatch(install, -1)
	if len(lines) < 2 {
		t.Errorf("install.yaml has %d image: lines", len(lines))
	}
	for _, m := range lines {
		if string(m[1]) != strings.TrimSpace(string(ref)) {
			t.Errorf("install.yaml: image: %s, want %s", m[1], ref)
		}
	}
	c := startCluster(t)
	for _, kind := range []string{"CustomResourceDefinition", "Namespace"} {
		for _, u := range find(objs, kind, "") {
			if err := c.apply(t, u, false); err != nil {
				t.Fatalf("apply: %v", err)
			}
		}
	}
	for _, u := range objs {
		if err := c.apply(t, u, true); err != nil {
			t.Errorf("install.yaml: %v", err)
		}
	}
}
