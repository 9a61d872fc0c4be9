package oauth

import (
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
)

// Session is what Visor keeps in every fosite request: the member who
// consented and the expiry of each token. It holds no secret.
type Session struct {
	MemberID  uuid.UUID                      `json:"member_id"`
	ExpiresAt map[fosite.TokenType]time.Time `json:"expires_at,omitempty"`
}

var _ fosite.Session = (*Session)(nil)

// SetExpiresAt sets the expiry of one token type.
func (s *Session) SetExpiresAt(key fosite.TokenType, exp time.Time) {
	if s.ExpiresAt == nil {
		s.ExpiresAt = map[fosite.TokenType]time.Time{}
	}
	s.ExpiresAt[key] = exp
}

// GetExpiresAt returns the expiry of one token type, zero when unset.
func (s *Session) GetExpiresAt(key fosite.TokenType) time.Time { return s.ExpiresAt[key] }

// GetUsername returns "": Visor does not expose member emails to clients.
func (s *Session) GetUsername() string { return "" }

// GetSubject returns the member id.
func (s *Session) GetSubject() string { return s.MemberID.String() }

// Clone returns a deep copy.
func (s *Session) Clone() fosite.Session {
	c := *s
	c.ExpiresAt = maps.Clone(s.ExpiresAt)
	return &c
}
