package pgembed

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultDatabase is the database Start creates when Options.Database is empty.
const DefaultDatabase = "options_record"

// Options configures Start. Only DataDir is required.
type Options struct {
	// DataDir is the directory pgembed owns: the cluster is DataDir/pgdata and, when the path is
	// short enough, the socket directory is DataDir/run. It is created if missing.
	DataDir string
	// BinDir holds initdb and postgres. Default: the /usr/lib/postgresql/<major>/bin matching an
	// existing cluster's PG_VERSION, else the newest one, else `pg_config --bindir` from PATH.
	BinDir string
	// Fsync makes the cluster crash-safe: set it for real use. When false (tests) fsync,
	// synchronous_commit and full_page_writes are off and initdb skips syncing.
	Fsync bool
	// Database is created if it does not exist. Default DefaultDatabase.
	Database string
	// Logger receives start/stop events. Default: discard.
	Logger *slog.Logger
	// Settings are extra GUCs, passed as `-c name=value`; they override pgembed's defaults
	// (see settings) but may not name the connection settings pgembed owns.
	Settings map[string]string
}

// ownedSettings are the GUCs that keep the server private; Options.Settings may not set them.
var ownedSettings = []string{
	"listen_addresses", "port", "unix_socket_directories", "unix_socket_group",
	"unix_socket_permissions", "hba_file", "ident_file", "config_file", "data_directory",
}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// withDefaults validates o and fills in the defaults that do not depend on the cluster.
func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("pgembed: Options.DataDir is required")
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, fmt.Errorf("pgembed: data dir: %w", err)
	}
	o.DataDir = dir
	if o.Database == "" {
		o.Database = DefaultDatabase
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for name := range o.Settings {
		if !settingName.MatchString(name) {
			return o, fmt.Errorf("pgembed: setting %q: not a valid parameter name", name)
		}
		if slices.Contains(ownedSettings, strings.ToLower(name)) {
			return o, fmt.Errorf("pgembed: setting %q is owned by pgembed (the server must stay on its private socket)", name)
		}
	}
	return o, nil
}

// settings returns the postgres command-line settings for a server whose socket is in socketDir.
func (o Options) settings(socketDir string) map[string]string {
	s := map[string]string{
		"shared_buffers":            "128MB",
		"max_connections":           "100",
		"default_toast_compression": "lz4",
		"logging_collector":         "on",
		"log_directory":             "log", // relative to pgdata
		"log_filename":              "postgresql-%a.log",
		"log_rotation_age":          "1d",
		"log_rotation_size":         "0",
		"log_truncate_on_rotation":  "on",
	}
	if !o.Fsync {
		s["fsync"] = "off"
		s["synchronous_commit"] = "off"
		s["full_page_writes"] = "off"
	}
	maps.Copy(s, o.Settings)
	s["listen_addresses"] = ""
	s["port"] = strconv.Itoa(port)
	s["unix_socket_directories"] = socketDir
	s["unix_socket_permissions"] = "0700"
	return s
}

// settingsArgs renders settings as postgres arguments in a stable order.
func settingsArgs(s map[string]string) []string {
	args := make([]string, 0, 2*len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		args = append(args, "-c", k+"="+s[k])
	}
	return args
}

// findBinDir picks the directory holding initdb and postgres. wantMajor, when not empty, is the
// major version of an existing cluster and wins over newer installed versions.
func findBinDir(wantMajor string) (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestVer := "", -1.0
	for _, d := range dirs {
		major := filepath.Base(filepath.Dir(d))
		if !isExecutable(filepath.Join(d, "postgres")) || !isExecutable(filepath.Join(d, "initdb")) {
			continue
		}
		if major == wantMajor {
			return d, nil
		}
		if v, err := strconv.ParseFloat(major, 64); err == nil && v > bestVer {
			best, bestVer = d, v
		}
	}
	if best != "" {
		return best, nil
	}
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return "", fmt.Errorf("pgembed: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin and pg_config failed (%w); install postgresql or set the binary directory", err)
	}
	d := strings.TrimSpace(string(out))
	if !isExecutable(filepath.Join(d, "postgres")) {
		return "", fmt.Errorf("pgembed: pg_config --bindir is %s, which has no postgres server binary", d)
	}
	return d, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Installed reports whether the PostgreSQL server binaries Start needs are
// installed (and, if not, why not).
func Installed() error {
	_, err := findBinDir("")
	return err
}
