// Package credentials holds the records behind Visor's non-key
// credentials: OAuth clients, OAuth codes and tokens (by signature),
// consents, members' sign-in sessions and round tokens. It imports no
// infrastructure; storage/postgres implements Store and auth/oauth drives
// it.
package credentials

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ClientKind says how a client came to be known.
type ClientKind string

// Client kinds.
const (
	ClientPreregistered    ClientKind = "preregistered"     // created through the admin API
	ClientDynamic          ClientKind = "dynamic"           // RFC 7591 registration
	ClientMetadataDocument ClientKind = "metadata_document" // an HTTPS URL client_id, cached
)

// Token endpoint authentication methods.
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
)

// Client is an OAuth client of one tenant.
type Client struct {
	TenantID     uuid.UUID
	ID           string
	Kind         ClientKind
	Name         string
	ClientURI    string
	SecretHash   string // argon2id; "" for public clients
	RedirectURIs []string
	GrantTypes   []string
	Scopes       []string
	AuthMethod   string
	CreatedAt    time.Time
	FetchedAt    *time.Time // metadata documents only
}

// Public reports whether the client authenticates with no secret.
func (c Client) Public() bool { return c.AuthMethod == AuthNone }

// TokenKind names one of the four things fosite stores by signature.
type TokenKind string

// Token kinds.
const (
	KindCode    TokenKind = "code"
	KindPKCE    TokenKind = "pkce"
	KindAccess  TokenKind = "access"
	KindRefresh TokenKind = "refresh"
)

// Token is a stored code or token: its signature (never the token), the
// grant it belongs to, and the serialized request without secrets.
type Token struct {
	TenantID  uuid.UUID
	Kind      TokenKind
	Signature string
	RequestID string
	ClientID  string
	MemberID  uuid.UUID
	Active    bool
	Request   json.RawMessage
	ExpiresAt time.Time
}

// Session is a member's sign-in session. The cookie value is never stored;
// IDHash is its SHA-256.
type Session struct {
	TenantID  uuid.UUID
	IDHash    []byte
	MemberID  uuid.UUID
	ExpiresAt time.Time
}

// RoundToken is a credential minted for one round of an agent on a task.
type RoundToken struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	AgentID    uuid.UUID
	TaskID     uuid.UUID
	Scopes     []string
	SecretHash []byte // SHA-256 of the secret
	CreatedAt  time.Time
	ExpiresAt  time.Time
	RevokedAt  *time.Time
}

// Live reports whether the round token can authenticate at now.
func (r RoundToken) Live(now time.Time) bool { return r.RevokedAt == nil && now.Before(r.ExpiresAt) }

// Store persists credentials. Every method names its tenant; a row of
// another tenant is fault.NotFound, exactly as a missing one.
type Store interface {
	// Begin starts a transaction carried by the returned context: Store
	// methods called with that context run inside it until Commit or
	// Rollback.
	Begin(ctx context.Context) (context.Context, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error

	// CreateClient inserts c; an existing id is fault.Conflict.
	CreateClient(ctx context.Context, c *Client) error
	// PutMetadataClient inserts or refreshes a metadata-document client.
	PutMetadataClient(ctx context.Context, c *Client) error
	Client(ctx context.Context, tenantID uuid.UUID, id string) (Client, error)
	ListClients(ctx context.Context, tenantID uuid.UUID) ([]Client, error)
	DeleteClient(ctx context.Context, tenantID uuid.UUID, id string) error
	// CountClientsSince counts clients of kind created after since.
	CountClientsSince(ctx context.Context, tenantID uuid.UUID, kind ClientKind, since time.Time) (int, error)

	CreateToken(ctx context.Context, t *Token) error
	// Token returns the token whatever its Active flag.
	Token(ctx context.Context, tenantID uuid.UUID, kind TokenKind, signature string) (Token, error)
	// DeactivateToken clears Active; fault.NotFound when no active token matched.
	DeactivateToken(ctx context.Context, tenantID uuid.UUID, kind TokenKind, signature string) error
	DeleteToken(ctx context.Context, tenantID uuid.UUID, kind TokenKind, signature string) error
	// RevokeGrant deactivates every token of kind minted for requestID;
	// kind "" means every kind.
	RevokeGrant(ctx context.Context, tenantID uuid.UUID, kind TokenKind, requestID string) error

	Consent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) ([]string, error)
	// AddConsent records scopes as approved, in addition to earlier ones.
	AddConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string, scopes []string) error
	ListConsents(ctx context.Context, tenantID, memberID uuid.UUID) (map[string][]string, error)
	// RevokeConsent forgets the consent and revokes the client's tokens for
	// the member.
	RevokeConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) error

	CreateSession(ctx context.Context, s *Session) error
	// SessionByHash finds a live session by the SHA-256 of its cookie value;
	// the tenant is whatever the session belongs to.
	SessionByHash(ctx context.Context, idHash []byte, now time.Time) (Session, error)
	DeleteSession(ctx context.Context, idHash []byte) error

	CreateRoundToken(ctx context.Context, r *RoundToken) error
	RoundToken(ctx context.Context, tenantID, id uuid.UUID) (RoundToken, error)
	RevokeRoundToken(ctx context.Context, tenantID, id uuid.UUID) error

	// ServerSecret returns the HMAC key shared by every replica, creating
	// it on first use.
	ServerSecret(ctx context.Context) ([]byte, error)

	// DeleteExpired removes codes, tokens, sessions and round tokens that
	// expired before cutoff, and returns how many rows went.
	DeleteExpired(ctx context.Context, cutoff time.Time) (int64, error)
}

// LiveKey is an API key that can still authenticate: its id, its scopes,
// and the current role of the member who stands behind it ("" when none
// does).
type LiveKey struct {
	ID     uuid.UUID
	Scopes []string
	Role   string
}

// LiveGrant is an OAuth grant that still holds an active access token: its
// fosite request id, the role its member holds now and the scopes the grant
// was given (before the role bounds them).
type LiveGrant struct {
	RequestID string
	Role      string
	Scopes    []string
}
