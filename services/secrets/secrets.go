// Package secrets seals the secrets Visor keeps at rest (database
// passwords, upstream tokens, environment values) by envelope encryption:
// each secret gets its own random data key, which encrypts it with
// AES-256-GCM; the data key is itself encrypted ("wrapped") by a
// key-encryption key from the configuration, whose id the sealed value
// records. Rotating the key-encryption key therefore re-wraps 32-byte data
// keys and never touches the secrets themselves. docs/secrets.md is the
// operator's guide.
//
// A sealed value is bound to a context string its owner chooses (the row
// it belongs to), so a value copied into another row or tenant does not
// open there.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySize is the size of every key, key-encryption or data: AES-256.
const KeySize = 32

// version prefixes every sealed value, so the format can change later.
const version = "v1"

// ErrUnknownKey is returned when a sealed value names a key the keyring no
// longer holds: the key was removed before its values were re-wrapped.
var ErrUnknownKey = errors.New("secrets: sealed under a key the keyring does not hold")

// ErrCorrupt is returned for a value that is not a sealed value, or that
// fails authentication (altered, or opened under another context).
var ErrCorrupt = errors.New("secrets: not a valid sealed value for this context")

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Keyring holds the key-encryption keys. The first encrypts; all decrypt.
type Keyring struct {
	primary string
	ids     []string
	keys    map[string]cipher.AEAD
}

// ParseKeyring reads "id:base64-32-bytes,id2:…" (standard or URL base64).
// Errors say which entry is wrong, never echoing a key.
func ParseKeyring(spec string) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, b64, ok := strings.Cut(entry, ":")
		if !ok || !keyIDRE.MatchString(id) {
			return nil, fmt.Errorf("entry %d must be id:base64-key with an id of 1-32 letters, digits, '-' or '_'", i+1)
		}
		raw, err := decodeKey(b64)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", id, err)
		}
		if err := k.add(id, raw); err != nil {
			return nil, err
		}
	}
	if k.primary == "" {
		return nil, errors.New("holds no key; want id:base64-32-bytes (generate one with: openssl rand -base64 32)")
	}
	return k, nil
}

func decodeKey(b64 string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(strings.TrimSpace(b64)); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("must decode to %d bytes, not %d", KeySize, len(raw))
			}
			return raw, nil
		}
	}
	return nil, errors.New("is not base64")
}

func (k *Keyring) add(id string, raw []byte) error {
	if _, dup := k.keys[id]; dup {
		return fmt.Errorf("key id %q appears twice", id)
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return err
	}
	k.keys[id] = aead
	k.ids = append(k.ids, id)
	if k.primary == "" {
		k.primary = id
	}
	return nil
}

// NewKey returns a fresh random key as a keyring entry, "id:base64".
func NewKey(id string) (string, error) {
	if !keyIDRE.MatchString(id) {
		return "", fmt.Errorf("key id %q must be 1-32 letters, digits, '-' or '_'", id)
	}
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return id + ":" + base64.StdEncoding.EncodeToString(raw), nil
}

// Primary is the id of the key that seals new values.
func (k *Keyring) Primary() string { return k.primary }

// IDs lists the key ids, the primary first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
