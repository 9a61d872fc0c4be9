package identity_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

func TestCredentialsAreParsedOnce(t *testing.T) {
	id := uuid.NewString()
	for s, want := range map[string]identity.Credential{
		"key:" + id:       {Kind: identity.CredentialKey, ID: id},
		"round:" + id:     {Kind: identity.CredentialRound, ID: id},
		"oauth:req-1":     {Kind: identity.CredentialOAuth, ID: "req-1"},
		"session:0a0b0c0": {Kind: identity.CredentialSession, ID: "0a0b0c0"},
		"platform":        {Kind: identity.CredentialOther, ID: "platform"},
		"system/cli:ann":  {Kind: identity.CredentialOther, ID: "system/cli:ann"},
		"round":           {Kind: identity.CredentialOther, ID: "round"},
	} {
		got := identity.ParseCredential(s)
		require.Equal(t, want, got, s)
		require.Equal(t, s, got.String(), "the parsed form prints back as it was")
	}
	require.True(t, identity.Principal{CredentialID: "round:" + id}.OnRound())
	require.False(t, identity.Principal{CredentialID: "key:" + id}.OnRound())

	key, _ := identity.NewKeySecret(uuid.New())
	require.Equal(t, identity.TokenKey, identity.TokenKindOf(key))
	require.Equal(t, identity.TokenRound, identity.TokenKindOf(identity.RoundTokenPrefix+"x"))
	require.Equal(t, identity.TokenOther, identity.TokenKindOf("ory_at_abc"))
}

func FuzzParseCredential(f *testing.F) {
	for _, s := range []string{"key:1", "round:", "oauth:a:b", "", "session:x", "other"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := identity.ParseCredential(s)
		if c.String() != s {
			t.Fatalf("ParseCredential(%q) = %+v prints as %q", s, c, c.String())
		}
	})
}
