package audit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMaskedChange(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, ``},
		{`{"role":"admin","password":"hunter22hunter22"}`, `{"password":"(set)","role":"admin"}`},
		{`{"client_secret":"s","nested":{"refresh_token":"r","list":[{"Password":"p"}]},"token_endpoint_auth_method":"none"}`,
			`{"client_secret":"(set)","nested":{"list":[{"Password":"(set)"}],"refresh_token":"(set)"},"token_endpoint_auth_method":"none"}`},
		{`{"password":"hunter22hunter22",`, `{"unreadable_body_bytes":31}`},
		{`not json password=hunter22`, `{"unreadable_body_bytes":26}`},
		{`{"name":"a\u0000b"}`, `{"name":"a\u0000b"}`},
	} {
		got, digest := MaskedChange([]byte(tc.body))
		if got != tc.want {
			t.Errorf("MaskedChange(%s) = %s, want %s", tc.body, got, tc.want)
		}
		if len(digest) != 64 {
			t.Errorf("digest %q", digest)
		}
		if strings.Contains(got, "hunter22") || strings.ContainsRune(got, 0) || !utf8.ValidString(got) {
			t.Errorf("MaskedChange(%s) = %q keeps a secret or cannot be stored", tc.body, got)
		}
	}
	got, _ := MaskedChange([]byte("{\"name\":\"\xff\"}"))
	if !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8 kept: %q", got)
	}
	if Clean("a\x00b\xff") != "a\uFFFDb\uFFFD" {
		t.Errorf("Clean: %q", Clean("a\x00b\xff"))
	}
}
