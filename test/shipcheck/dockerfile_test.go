package shipcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	digest "github.com/opencontainers/go-digest"
	"golang.org/x/mod/semver"
)

// productPackage is what `make build` and the Dockerfile compile.
const productPackage = "./cmd/options-record"

func dockerfile(t *testing.T) ([]byte, []instructions.Stage) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return data, stages
}

var pinned = regexp.MustCompile(`^[a-z0-9./-]+:([A-Za-z0-9._-]+)@sha256:[0-9a-f]{64}$`)

func TestDockerfile(t *testing.T) {
	t.Parallel()
	_, stages := dockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	for _, s := range stages {
		if !pinned.MatchString(s.BaseName) {
			t.Errorf("FROM %s is not pinned by version and digest", s.BaseName)
		}
	}
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") && final.BaseName != "scratch" {
		t.Errorf("runtime base %s: want distroless static or scratch", final.BaseName)
	}
	var user string
	var entry *instructions.EntrypointCommand
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entry = c
		case *instructions.RunCommand:
			t.Errorf("the runtime stage runs %q: it has no shell", c.CmdLine)
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" || !regexp.MustCompile(`^\d+$`).MatchString(uid) {
		t.Errorf("runtime USER %q: want a numeric non-root uid (runAsNonRoot can only check numbers)", user)
	}
	if entry == nil || entry.PrependShell || len(entry.CmdLine) != 1 || entry.CmdLine[0] != "/options-record" {
		t.Errorf("ENTRYPOINT must be the exec form [\"/options-record\"], got %+v", entry)
	}

	// The build stage's Go toolchain is the project's Go: at least go.mod's
	// go version, same minor.
	goMod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	modGo := "v" + string(m[1])
	builder := stages[0].BaseName
	tm := regexp.MustCompile(`^golang:(\d+\.\d+\.\d+)`).FindStringSubmatch(builder)
	if tm == nil {
		t.Fatalf("the build stage %s is not a golang:X.Y.Z image", builder)
	}
	imgGo := "v" + tm[1]
	if semver.Compare(imgGo, modGo) < 0 || semver.MajorMinor(imgGo) != semver.MajorMinor(modGo) {
		t.Errorf("the build stage has Go %s, go.mod says go %s", imgGo, modGo)
	}
}

// TestDockerfileBuildsLikeMake: the build stage compiles the same package
// with the same environment and flags as `make build`.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	t.Parallel()
	_, stages := dockerfile(t)
	var run []string
	for _, s := range stages {
		for _, c := range s.Commands {
			if r, ok := c.(*instructions.RunCommand); ok && strings.Contains(strings.Join(r.CmdLine, " "), productPackage) {
				run = strings.Fields(strings.ReplaceAll(strings.Join(r.CmdLine, " "), "\\\n", " "))
			}
		}
	}
	if run == nil {
		t.Fatalf("no RUN of the Dockerfile builds %s", productPackage)
	}
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	inBuild := false
	for _, line := range strings.Split(string(makefile), "\n") {
		switch {
		case strings.HasPrefix(line, "build:"):
			inBuild = true
		case inBuild && strings.HasPrefix(line, "\t"):
			if strings.Contains(line, productPackage) {
				recipe = strings.Fields(line)
			}
		case inBuild:
			inBuild = false
		}
	}
	if recipe == nil {
		t.Fatalf("the Makefile's build recipe does not build %s", productPackage)
	}
	want, got := goBuild(t, "Makefile", recipe), goBuild(t, "Dockerfile", run)
	// The image builds for the platform it is built for.
	delete(got.env, "GOOS")
	delete(got.env, "GOARCH")
	if fmt.Sprint(got.env) != fmt.Sprint(want.env) || !slices.Equal(got.flags, want.flags) || got.pkg != want.pkg {
		t.Errorf("the Dockerfile builds\n  env %v flags %v package %s\nbut `make build` builds\n  env %v flags %v package %s",
			got.env, got.flags, got.pkg, want.env, want.flags, want.pkg)
	}
	if want.env["CGO_ENABLED"] != "0" || !slices.Contains(want.flags, "-trimpath") {
		t.Errorf("`make build` is not a static, path-free build: env %v flags %v", want.env, want.flags)
	}
}

type goBuildCmd struct {
	env   map[string]string
	flags []string // sorted, without -o and its value
	pkg   string
}

// goBuild reads "[VAR=value ...] go build [flags] package" out of a command.
func goBuild(t *testing.T, where string, fields []string) goBuildCmd {
	t.Helper()
	c := goBuildCmd{env: map[string]string{}}
	i := slices.Index(fields, "go")
	if i < 0 || i+1 >= len(fields) || fields[i+1] != "build" {
		t.Fatalf("%s: no `go build` in %q", where, fields)
	}
	for _, f := range fields[:i] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.env[k] = v
		}
	}
	args := fields[i+2:]
	for j := 0; j < len(args); j++ {
		switch a := args[j]; {
		case a == "-o":
			j++
		case strings.HasPrefix(a, "-"):
			c.flags = append(c.flags, a)
		default:
			c.pkg = a
		}
	}
	slices.Sort(c.flags)
	return c
}

// TestDockerfileLint runs BuildKit's Dockerfile linter, the rules of
// `docker build --check`, with base images resolved offline.
func TestDockerfileLint(t *testing.T) {
	t.Parallel()
	data, _ := dockerfile(t)
	sm := llb.NewSourceMap(nil, "Dockerfile", "Dockerfile", data)
	sm.Definition = &llb.Definition{}
	res, err := dockerfile2llb.DockerfileLint(context.Background(), data, dockerfile2llb.ConvertOpt{
		SourceMap:    sm,
		MetaResolver: offlineResolver{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatalf("Dockerfile: %s", res.Error.Message)
	}
	for _, w := range res.Warnings {
		line := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		t.Errorf("Dockerfile:%d: %s: %s (%s)", line, w.RuleName, w.Detail, w.URL)
	}
}

// offlineResolver answers BuildKit's base-image look-ups without a registry:
// a linux image of the build platform with an empty configuration.
type offlineResolver struct{}

func (offlineResolver) ResolveImageConfig(_ context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	platform := map[string]string{"os": "linux", "architecture": "amd64"}
	if opt.ImageOpt != nil && opt.ImageOpt.Platform != nil {
		platform = map[string]string{"os": opt.ImageOpt.Platform.OS, "architecture": opt.ImageOpt.Platform.Architecture}
	}
	cfg, err := json.Marshal(map[string]any{"os": platform["os"], "architecture": platform["architecture"], "config": map[string]any{}})
	if err != nil {
		return "", "", nil, err
	}
	dgst := digest.FromBytes(cfg)
	if _, d, ok := strings.Cut(ref, "@"); ok {
		dgst = digest.Digest(d)
	}
	return ref, dgst, cfg, nil
}

// TestDockerignore: the build context keeps every file `go build` of the
// product needs (its packages' Go and embedded files, go.mod, go.sum) and
// leaves out the git history, build output, local data and the trees the
// binary does not need.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	excluded := func(rel string) bool {
		ok, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	needed := []string{"go.mod", "go.sum"}
	cmd := exec.Command("go", "list", "-deps", "-json", productPackage)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Standard            bool
			Module              *struct{ Main bool }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Standard || p.Module == nil || !p.Module.Main {
			continue
		}
		for _, name := range append(p.GoFiles, p.EmbedFiles...) {
			rel, err := filepath.Rel(root, filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			needed = append(needed, rel)
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, rel := range needed {
		if excluded(rel) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", rel)
		}
	}
	for _, rel := range []string{".git/HEAD", "bin/options-record", ".options-record/pgdata/PG_VERSION", "test/e2e/sink_test.go",
		"deploy/kustomization.yaml", "kind-config/credentials/tls.key", ".cache/x", "README.md"} {
		if !excluded(rel) {
			t.Errorf(".dockerignore keeps %s in the build context", rel)
		}
	}
}
