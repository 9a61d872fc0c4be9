package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/rounds"
)

// bodyTypes are the request bodies of every admin route that reads one.
func bodyTypes() []any {
	return []any{&NewTenant{}, &TenantPatch{}, &NewMember{}, &MemberPatch{}, &NewKey{}, &NewAgent{}, &AgentPatch{},
		&AgentSettingsUpdate{}, &NewRoundToken{}, &NewOAuthClient{}, &ApproveRequest{}, &DenyRequest{}, &NewGrant{},
		&NewTask{}, &TaskPatch{}, &CompleteTask{}, &BlockTask{}, &NewComment{}, &NewRoutine{}, &RoutinePatch{},
		&NewReminder{}, &NewEndpoint{}}
}

// FuzzAdminBodies: any body, into any admin route's request type, through
// decode and decodeOptional, decodes or fails with a client-mistake code,
// never a panic or an internal error.
func FuzzAdminBodies(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"name":"a","role":"owner"}`, `{"email":"a@b.c","password":"x"}`,
		`{"scopes":["tools:read"],"kind":"operator"}`, `{"settings":{"capabilities":{"denied_tools":["x*"]}}}`,
		`{"title":"t","assignee":"bob","schedule":"0 9 * * 1"}`, `{"due_at":"2026-01-01T00:00:00Z"}`,
		`{"ttl_seconds":-1}`, `{"redirect_uris":["http://127.0.0.1/cb"]}`, `{"url":"https://example.com/hook"}`,
		`{"budget_cents":9223372036854775808}`, `{"name":"\u0000"}`, "{\"name\":\"\xff\"}", `{"a":1}`, `[]`, `{"name":"a"}x`} {
		f.Add(s)
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, body string) {
		for _, target := range bodyTypes() {
			for _, dec := range []func(echo.Context, any) error{decode, decodeOptional} {
				req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
				err := dec(e.NewContext(req, httptest.NewRecorder()), target)
				if err == nil {
					continue
				}
				if code := fault.CodeOf(err); code != fault.Invalid && code != fault.TooLarge {
					t.Fatalf("%T from %q: %v (code %s); want invalid_argument", target, body, err, code)
				}
			}
		}
	})
}

// FuzzPageQuery: any limit and cursor a caller sends are read as a page
// and a keyset position of every list that pages by one, or refused as
// invalid, never a panic or an internal error.
func FuzzPageQuery(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"100", ""}, {"0", ""}, {"501", ""}, {"-1", ""}, {"1e3", ""},
		{"10", EncodeCursor(board.Position{})}, {"", "!!"}, {"", "e30"}, {"", "bnVsbA"}, {"", strings.Repeat("A", 2000)},
		{"", EncodeCursor(map[string]any{"t": "9999-12-31T23:59:59Z", "id": "not-a-uuid"})}} {
		f.Add(s[0], s[1])
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, limit, cursor string) {
		q := url.Values{"limit": {limit}, "cursor": {cursor}}
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/?"+q.Encode(), nil), httptest.NewRecorder())
		p, err := ReadPage(c)
		if err != nil {
			if fault.CodeOf(err) != fault.Invalid {
				t.Fatalf("ReadPage(%q, %q): %v", limit, cursor, err)
			}
			return
		}
		if p.Limit < 1 || p.Limit > MaxPageLimit {
			t.Fatalf("ReadPage(%q) gave limit %d", limit, p.Limit)
		}
		for _, pos := range []any{&board.Position{}, &grants.Position{}, &rounds.Position{}} {
			if _, err := p.Decode(pos); err != nil && fault.CodeOf(err) != fault.Invalid {
				t.Fatalf("Decode(%q) into %T: %v", cursor, pos, err)
			}
		}
	})
}
