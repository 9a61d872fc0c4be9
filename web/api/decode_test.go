package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
)

// FuzzDecode: any body decodes or fails with a client-mistake code, never
// a panic or an internal error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"name":"a"}`, `{"name":`, `[]`, `null`, `{"reports_to":null}`,
		`{"reports_to":"zz"}`, `{"settings":{"capabilities":{"allowed_tools":[1]}}}`, `{"a":1}{"b":2}`, "\x00", `{"budget_cents":1e400}`} {
		f.Add(s)
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, body string) {
		for _, target := range []any{&NewAgent{}, &AgentPatch{}, &NewKey{}, &TenantPatch{}, &MemberPatch{}} {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			c := e.NewContext(req, httptest.NewRecorder())
			err := decode(c, target)
			if err == nil {
				continue
			}
			if code := fault.CodeOf(err); code != fault.Invalid && code != fault.TooLarge {
				t.Fatalf("decode(%q) = %v (code %s); want invalid_argument", body, err, code)
			}
			if fault.HTTPStatus(fault.CodeOf(err)) >= 500 {
				t.Fatalf("decode(%q) maps to a 5xx", body)
			}
		}
	})
}

// TestDecodeRefusesTextPostgresCannotStore: the decoder itself refuses, so
// a handler mounted without web/server's check still never passes a NUL
// or invalid UTF-8 on to storage.
func TestDecodeRefusesTextPostgresCannotStore(t *testing.T) {
	e := echo.New()
	for _, body := range []string{`{"name":"a\u0000"}`, "{\"name\":\"\xff\"}", `{"name":"\udc00"}`} {
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), httptest.NewRecorder())
		err := decode(c, &NewAgent{})
		require.Equal(t, fault.Invalid, fault.CodeOf(err), body)
		require.Contains(t, fault.Message(err), "without NUL characters")
	}
}
