package secrets

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// A sealed value reads "v1.<key id>.<wrapped data key>.<ciphertext>", both
// binary parts in unpadded URL base64, each as nonce || GCM output. The
// data key is wrapped with the key id as associated data, the secret with
// the owner's context string.

// Seal encrypts plaintext under a new data key wrapped by the primary key,
// bound to context.
func (k *Keyring) Seal(plaintext []byte, context string) (string, error) {
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return "", err
	}
	inner, err := newAEAD(dek)
	if err != nil {
		return "", err
	}
	body, err := seal(inner, plaintext, []byte(context))
	if err != nil {
		return "", err
	}
	wrapped, err := seal(k.keys[k.primary], dek, []byte(k.primary))
	if err != nil {
		return "", err
	}
	return join(k.primary, wrapped, body), nil
}

// Open decrypts a sealed value bound to context. Errors: ErrUnknownKey,
// ErrCorrupt.
func (k *Keyring) Open(sealed, context string) ([]byte, error) {
	id, wrapped, body, err := split(sealed)
	if err != nil {
		return nil, err
	}
	dek, err := k.unwrap(id, wrapped)
	if err != nil {
		return nil, err
	}
	inner, err := newAEAD(dek)
	if err != nil {
		return nil, ErrCorrupt
	}
	return open(inner, body, []byte(context))
}

// Rewrap re-wraps the value's data key under the primary key, leaving the
// secret's ciphertext as it is. It reports whether anything changed (a
// value already under the primary key is returned unchanged).
func (k *Keyring) Rewrap(sealed string) (string, bool, error) {
	id, wrapped, body, err := split(sealed)
	if err != nil {
		return "", false, err
	}
	if id == k.primary {
		return sealed, false, nil
	}
	dek, err := k.unwrap(id, wrapped)
	if err != nil {
		return "", false, err
	}
	rewrapped, err := seal(k.keys[k.primary], dek, []byte(k.primary))
	if err != nil {
		return "", false, err
	}
	return join(k.primary, rewrapped, body), true, nil
}

// KeyID returns the id of the key a sealed value's data key is wrapped by.
func KeyID(sealed string) (string, error) {
	id, _, _, err := split(sealed)
	return id, err
}

func (k *Keyring) unwrap(id string, wrapped []byte) ([]byte, error) {
	kek, ok := k.keys[id]
	if !ok {
		return nil, ErrUnknownKey
	}
	return open(kek, wrapped, []byte(id))
}

func seal(a cipher.AEAD, plaintext, ad []byte) ([]byte, error) {
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, plaintext, ad), nil
}

func open(a cipher.AEAD, data, ad []byte) ([]byte, error) {
	if len(data) < a.NonceSize()+a.Overhead() {
		return nil, ErrCorrupt
	}
	out, err := a.Open(nil, data[:a.NonceSize()], data[a.NonceSize():], ad)
	if err != nil {
		return nil, ErrCorrupt
	}
	return out, nil
}

var b64 = base64.RawURLEncoding

func join(id string, wrapped, body []byte) string {
	return version + "." + id + "." + b64.EncodeToString(wrapped) + "." + b64.EncodeToString(body)
}

func split(sealed string) (id string, wrapped, body []byte, err error) {
	parts := strings.Split(sealed, ".")
	if len(parts) != 4 || parts[0] != version || !keyIDRE.MatchString(parts[1]) {
		return "", nil, nil, ErrCorrupt
	}
	if wrapped, err = b64.DecodeString(parts[2]); err != nil {
		return "", nil, nil, ErrCorrupt
	}
	if body, err = b64.DecodeString(parts[3]); err != nil {
		return "", nil, nil, ErrCorrupt
	}
	return parts[1], wrapped, body, nil
}
