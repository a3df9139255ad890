package options

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/options-record/options-record/cmd/options-record/app"
)

// Common are the flags every command shares.
type Common struct {
	DataDir     string
	DatabaseURL string
	LogLevel    string
}

func (c *Common) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", ".options-record", "directory of the embedded PostgreSQL and generated credentials")
	fs.StringVar(&c.DatabaseURL, "database-url", os.Getenv("OPTIONS_RECORD_DATABASE_URL"), "PostgreSQL connection string; empty starts the embedded PostgreSQL in --data-dir (env OPTIONS_RECORD_DATABASE_URL)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
}

func (c *Common) validate() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return errors.New("--log-level: want debug, info, warn or error")
	}
	return nil
}

func (c *Common) database() app.DatabaseOptions {
	return app.DatabaseOptions{URL: c.DatabaseURL, DataDir: c.DataDir}
}

// Logger is the JSON logger of --log-level, writing to w.
func (c *Common) Logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// Rules are the flags of the commands that read rules.
type Rules struct {
	Files               []string
	Namespace           string
	Cluster             string
	SecretDigestKeyFile string
}

func (r *Rules) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&r.Files, "rules-file", nil, "YAML file of OptionsRecordController objects (repeatable)")
	fs.StringVar(&r.Namespace, "namespace", "options-record", "the sink's own namespace: rules there may select any namespace")
	fs.StringVar(&r.Cluster, "cluster", "default", "cluster name recorded for events from the configured token or client CA")
	fs.StringVar(&r.SecretDigestKeyFile, "secret-digest-key-file", "", "key of the HMAC digests that replace Secret values (the same for every replica of a cluster); empty: generated under --data-dir")
}

func (r *Rules) rules() app.RulesOptions {
	return app.RulesOptions{Files: r.Files, Namespace: r.Namespace}
}

// trimmed is a comma-separated flag's values without the spaces around
// them and without empty ones ("ingest, api" is ingest and api).
func trimmed(l []string) []string {
	var out []string
	for _, x := range l {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
