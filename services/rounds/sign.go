package rounds

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Pushed wake-ups are signed the Standard Webhooks way: three headers, and
// an HMAC-SHA256 over "<id>.<timestamp>.<body>" keyed with the endpoint's
// secret. Receivers de-duplicate on the id, which every retry of one
// wake-up repeats.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret as shown to operators: the
// rest is the base64 of the key bytes.
const SecretPrefix = "whsec_"

// secretBytes is the size of a generated signing key.
const secretBytes = 32

// NewSecret returns a random signing key and its shown form.
func NewSecret() ([]byte, string) {
	key := make([]byte, secretBytes)
	_, _ = rand.Read(key)
	return key, FormatSecret(key)
}

// FormatSecret returns the shown form of key ("whsec_" + base64).
func FormatSecret(key []byte) string { return SecretPrefix + base64.StdEncoding.EncodeToString(key) }

// ParseSecret returns the key of a shown secret.
func ParseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errors.New("a signing secret is whsec_ followed by base64")
	}
	return key, nil
}

// Sign returns the webhook-signature value of one delivery: "v1," and the
// base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>".
func Sign(key []byte, id string, at time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SetHeaders puts the three signature headers of body on h.
func SetHeaders(h http.Header, key []byte, id string, at time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, Sign(key, id, at, body))
}

// Tolerance is how far a delivery's timestamp may be from the receiver's
// clock before Verify refuses it as a replay.
const Tolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("the webhook headers are missing")
	ErrStale        = errors.New("the webhook timestamp is too far from now")
	ErrBadSignature = errors.New("no webhook signature matches")
)

// Verify checks a received delivery's headers against key, as a runtime
// does: the timestamp within Tolerance of now and one of the
// space-separated v1 signatures matching. It returns the webhook id.
func Verify(key []byte, h http.Header, body []byte, now time.Time) (string, error) {
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return "", ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", ErrNoSignature
	}
	at := time.Unix(sec, 0)
	if at.Before(now.Add(-Tolerance)) || at.After(now.Add(Tolerance)) {
		return "", ErrStale
	}
	want := Sign(key, id, at, body)
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return id, nil
		}
	}
	return "", ErrBadSignature
}
