package identity

import (
	"strings"
)

// CredentialKind is the sort of credential that authenticated a request.
// It decides how the credential is re-checked and what it may do (a round
// token's task, a session's cookie), so it is parsed once, here, and every
// other place switches on it.
type CredentialKind string

// The credential kinds a Principal's CredentialID names.
const (
	CredentialKey     CredentialKind = "key"     // an API key: "key:<key id>"
	CredentialRound   CredentialKind = "round"   // a round token: "round:<token id>"
	CredentialOAuth   CredentialKind = "oauth"   // an OAuth grant: "oauth:<request id>"
	CredentialSession CredentialKind = "session" // a member session: "session:<hex of 8 bytes of its hash>"
	// CredentialOther is every other caller (the platform token, the CLI)
	// and anything unrecognised.
	CredentialOther CredentialKind = ""
)

// Credential is a CredentialID parsed: its kind and the id that names the
// credential within it.
type Credential struct {
	Kind CredentialKind
	ID   string
}

// ParseCredential parses a CredentialID. An id of no known kind is
// CredentialOther with the whole string as its ID.
func ParseCredential(s string) Credential {
	kind, id, ok := strings.Cut(s, ":")
	switch k := CredentialKind(kind); k {
	case CredentialKey, CredentialRound, CredentialOAuth, CredentialSession:
		if ok {
			return Credential{Kind: k, ID: id}
		}
	}
	return Credential{Kind: CredentialOther, ID: s}
}

// String is the CredentialID form: "kind:id", or the ID alone for
// CredentialOther.
func (c Credential) String() string {
	if c.Kind == CredentialOther {
		return c.ID
	}
	return string(c.Kind) + ":" + c.ID
}

// Credential returns the principal's credential, parsed.
func (p Principal) Credential() Credential { return ParseCredential(p.CredentialID) }

// OnRound reports whether p is an AI employee working one round (its
// credential is a round token).
func (p Principal) OnRound() bool { return p.Credential().Kind == CredentialRound }

// TokenKind is the sort of bearer token a request presents, read once
// from its shape (TokenKindOf) by the resolver.
type TokenKind int

// Bearer token kinds.
const (
	// TokenOther is anything else: an OAuth access token, or nothing Visor
	// made.
	TokenOther TokenKind = iota
	TokenKey             // "vsk_…", an API key (NewKeySecret)
	TokenRound           // "vsr_…", a round token
)

// RoundTokenPrefix starts every round token.
const RoundTokenPrefix = "vsr_"

// TokenKindOf returns the kind of a bearer token by its prefix; the
// resolver of that kind then checks the rest.
func TokenKindOf(token string) TokenKind {
	switch {
	case strings.HasPrefix(token, keyPrefix):
		return TokenKey
	case strings.HasPrefix(token, RoundTokenPrefix):
		return TokenRound
	}
	return TokenOther
}
