package identity

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestKeyTokenRoundTrip(t *testing.T) {
	id := uuid.New()
	token, secret := NewKeySecret(id)
	gotID, gotSecret, ok := ParseKeyToken(token)
	if !ok || gotID != id || gotSecret != secret {
		t.Fatalf("ParseKeyToken(%q) = %v, %q, %v; want %v, %q, true", token, gotID, gotSecret, ok, id, secret)
	}
	other, _ := NewKeySecret(id)
	if other == token {
		t.Fatal("two tokens for one key id share their secret")
	}
}

func TestParseKeyTokenRefusesMalformed(t *testing.T) {
	good, _ := NewKeySecret(uuid.New())
	for _, tok := range []string{
		"", "vsk_", "vsr_" + good[4:], good[:len(good)-1], good + "x",
		"vsk_" + strings.Repeat("z", 32) + good[36:], // id is not hex
		strings.Replace(good, "_", "-", 2),           // separator missing
	} {
		if _, _, ok := ParseKeyToken(tok); ok {
			t.Errorf("ParseKeyToken(%q) accepted a malformed token", tok)
		}
	}
}

func FuzzParseKeyToken(f *testing.F) {
	good, _ := NewKeySecret(uuid.New())
	f.Add(good)
	f.Add("vsk_")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, ok := ParseKeyToken(s)
		if !ok {
			return
		}
		// Whatever parses must rebuild into exactly the input.
		if rebuilt := keyPrefix + strings.ReplaceAll(id.String(), "-", "") + "_" + secret; rebuilt != s {
			t.Fatalf("ParseKeyToken(%q) parsed into something that rebuilds as %q", s, rebuilt)
		}
	})
}

func TestSecretHashing(t *testing.T) {
	h := HashSecret("correct horse battery")
	if strings.Contains(h, "correct horse") || !strings.HasPrefix(h, "$argon2id$") {
		t.Fatalf("hash %q is not an argon2id PHC string hiding its secret", h)
	}
	if !VerifySecret(h, "correct horse battery") {
		t.Fatal("the right secret does not verify")
	}
	if VerifySecret(h, "correct horse batterY") {
		t.Fatal("a wrong secret verifies")
	}
	if HashSecret("correct horse battery") == h {
		t.Fatal("two hashes of one secret share their salt")
	}
	for _, bad := range []string{"", "$argon2id$", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=99999999,t=2,p=1$c2FsdA$aGFzaA", // refuses costs that would stall the server
		strings.Replace(h, "$v=19$", "$v=18$", 1)} {
		if VerifySecret(bad, "correct horse battery") {
			t.Errorf("VerifySecret accepted malformed hash %q", bad)
		}
	}
}

func TestScopesImplyWeakerOnes(t *testing.T) {
	p := Principal{Scopes: []string{ScopeToolsAdmin, ScopeAdminRead}}
	for scope, want := range map[string]bool{
		ScopeToolsRead: true, ScopeToolsWrite: true, ScopeToolsAdmin: true,
		ScopeAdminRead: true, ScopeAdminWrite: false,
	} {
		if got := p.HasScope(scope); got != want {
			t.Errorf("HasScope(%q) = %v, want %v", scope, got, want)
		}
	}
	if (Principal{}).HasScope(ScopeToolsRead) {
		t.Error("a principal with no scopes holds tools:read")
	}
}
