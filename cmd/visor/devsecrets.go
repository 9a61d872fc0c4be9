package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/visorhq/visor/services/secrets"
)

// devDBNetworks lets dev's database sources reach databases on this
// machine.
const devDBNetworks = "127.0.0.0/8,::1/128,localhost"

// devSecretKeys returns the keyring `visor dev` uses when VISOR_SECRET_KEYS
// is unset: one key made on the first run and kept in
// VISOR_DEV_DIR/secret-keys (mode 0600), like the demo credentials, so the
// passwords it sealed open on the next run.
func devSecretKeys(getenv func(string) string) (string, error) {
	dir := getenv("VISOR_DEV_DIR")
	if dir == "" {
		dir = defaultOf("VISOR_DEV_DIR")
	}
	path := filepath.Join(dir, "secret-keys")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	key, err := secrets.NewKey("dev1")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keep the dev secret key: %w", err)
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the dev secret key: %w", err)
	}
	return key, nil
}
