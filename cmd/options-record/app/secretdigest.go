package app

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
	"github.com/options-record/options-record/store/model"
)

// loadSecretDigester reads the key Secret values are digested with: the file
// given (--secret-digest-key-file), else a random key generated once under
// the data directory. The key never goes to the database: without it, a
// stored digest cannot be tested against guesses of the value.
func loadSecretDigester(file, dataDir string, log *slog.Logger) (*model.SecretDigester, error) {
	generated := false
	if file == "" {
		if dataDir == "" {
			return nil, errors.New("no --secret-digest-key-file and no --data-dir to generate a key in")
		}
		var err error
		generated = true
		if file, err = secretfile.Ensure(filepath.Join(dataDir, "secret-digest-key")); err != nil {
			return nil, fmt.Errorf("secret digest key: %w", err)
		}
		log.Info("digesting Secret values with a key generated under --data-dir; replicas of one cluster need the same key (--secret-digest-key-file)", "key_file", file)
	}
	key, err := secretfile.Read(file, generated)
	if err != nil {
		return nil, fmt.Errorf("secret digest key: %w", err)
	}
	d, err := model.NewSecretDigester(bytes.TrimSpace(key))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return d, nil
}
