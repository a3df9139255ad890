// Package version is the release of this build: its version, the commit it
// was built from and when, set at link time by the Makefile's one
// VERSION_LDFLAGS (-X), and printed by `options-record version`, `kubectl
// record version` and the aggregated API's /version. A build without them
// (go build, go test) says v0.0.0-dev, and takes the commit and its date
// from the VCS stamp Go writes when it builds inside a git checkout.
//
// A leaf: the standard library and k8s.io/apimachinery's version.Info only.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Dev is the version of a build the Makefile did not stamp.
const Dev = "v0.0.0-dev"

// Set by the linker: -X github.com/options-record/options-record/api/version.Version=v0.1.0
// (and .Commit, .BuildDate). Only the Makefile's VERSION_LDFLAGS sets them.
var (
	// Version is the release, a semver tag (git describe --tags).
	Version = Dev
	// Commit is the full git commit hash of the source.
	Commit = ""
	// BuildDate is the commit's date, RFC 3339 in UTC: a reproducible
	// build writes the same bytes whenever it is built.
	BuildDate = ""
)

// Info is what the version commands print and the aggregated API reports.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Compiler  string `json:"compiler"`
	Platform  string `json:"platform"`
}

// Get returns this build's Info.
func Get() Info {
	i := Info{
		Version:   Version,
		Commit:    Commit,
		BuildDate: BuildDate,
		GoVersion: runtime.Version(),
		Compiler:  runtime.Compiler,
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if i.Version == "" {
		i.Version = Dev
	}
	if i.Commit == "" || i.BuildDate == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			modified := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					if i.Commit == "" {
						i.Commit = s.Value
					}
				case "vcs.time":
					if i.BuildDate == "" {
						i.BuildDate = s.Value
					}
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if modified && Commit == "" && i.Commit != "" {
				i.Commit += "-dirty"
			}
		}
	}
	return i
}

// String is the one line of `version` without -o.
func (i Info) String() string {
	commit, date := i.Commit, i.BuildDate
	if commit == "" {
		commit = "unknown"
	}
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.Version, commit, date, i.GoVersion, i.Platform)
}

// Kubernetes is i as a Kubernetes component reports its version at
// /version: gitVersion is the release, major and minor its numbers.
func (i Info) Kubernetes() *apimachineryversion.Info {
	major, minor := "", ""
	if v, ok := strings.CutPrefix(i.Version, "v"); ok {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) >= 2 {
			major, minor = parts[0], parts[1]
		}
	}
	treeState := "clean"
	if strings.HasSuffix(i.Commit, "-dirty") || strings.HasSuffix(i.Version, "-dirty") {
		treeState = "dirty"
	}
	if i.Commit == "" {
		treeState = ""
	}
	return &apimachineryversion.Info{
		Major:        major,
		Minor:        minor,
		GitVersion:   i.Version,
		GitCommit:    strings.TrimSuffix(i.Commit, "-dirty"),
		GitTreeState: treeState,
		BuildDate:    i.BuildDate,
		GoVersion:    i.GoVersion,
		Compiler:     i.Compiler,
		Platform:     i.Platform,
	}
}
