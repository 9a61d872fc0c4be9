package identity

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/google/uuid"
)

// KeyKind says whom a key acts as.
type KeyKind string

// Key kinds.
const (
	KeyOperator KeyKind = "operator" // maps to no agent: an operator principal
	KeyAgent    KeyKind = "agent"    // acts as one agent: an employee principal
)

// Key is an API key. Its secret is shown once, at creation, and stored only
// as an argon2id hash.
type Key struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	Kind       KeyKind
	AgentID    uuid.UUID // KeyAgent only
	Name       string
	SecretHash string
	Scopes     []string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	// CreatedBy names who made the key (Principal.ID: "member:<id>",
	// "operator:key:<id>", "operator:platform", ...); empty for keys made
	// before keys recorded it.
	CreatedBy string
	// CreatorMember is the member whose authority stands behind the key:
	// the member who made it, or who made the key that made it. The key
	// never acts beyond that member's current role, and dies with the
	// member. uuid.Nil when no member stands behind it (made by the
	// platform token or the CLI): its scopes alone bound it.
	CreatorMember uuid.UUID
}

// Live reports whether k can authenticate at now.
func (k Key) Live(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

const keyPrefix = "vsk_"

// NewKeySecret returns a fresh bearer token for key id and the secret part
// that is hashed for storage. The token is "vsk_<id hex>_<secret>".
func NewKeySecret(id uuid.UUID) (token, secret string) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return keyPrefix + hex.EncodeToString(id[:]) + "_" + secret, secret
}

// ParseKeyToken splits a key token into its id and secret. ok is false for
// anything that is not shaped like a Visor key.
func ParseKeyToken(token string) (id uuid.UUID, secret string, ok bool) {
	rest, found := strings.CutPrefix(token, keyPrefix)
	if !found || len(rest) != 32+1+43 || rest[32] != '_' {
		return uuid.Nil, "", false
	}
	// Only the canonical spelling parses (lower-case hex, base64url), so
	// one key has exactly one token.
	if strings.Trim(rest[:32], "0123456789abcdef") != "" || strings.Trim(rest[33:], base64URL) != "" {
		return uuid.Nil, "", false
	}
	raw, err := hex.DecodeString(rest[:32])
	if err != nil {
		return uuid.Nil, "", false
	}
	copy(id[:], raw)
	return id, rest[33:], true
}

const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
