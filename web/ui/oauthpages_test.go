package ui_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuthorizationServerPagesSpeakTheReadersLanguage: the authorization
// server's errors come from the catalog, in the reader's language.
func TestAuthorizationServerPagesSpeakTheReadersLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	p := b.get("/t/acme/oauth/authorize?response_type=code", "Accept-Language", "ja")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, `<html lang="ja">`)
	require.Contains(t, p.body, "<h1>続行できません</h1>")
	require.Contains(t, p.body, "リクエストに client_id がありません。")
	p = b.get("/t/acme/oauth/authorize?response_type=code&client_id=nobody", "Accept-Language", "en")
	require.Contains(t, p.body, "<h1>Cannot continue</h1>")
	require.Contains(t, p.body, "This application is not known to Acme.")
}
