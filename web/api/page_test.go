package api

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
)

func pageOf(t *testing.T, query string) (PageRequest, error) {
	t.Helper()
	c := echo.New().NewContext(httptest.NewRequest("GET", "/x?"+query, nil), httptest.NewRecorder())
	return ReadPage(c)
}

func TestReadPage(t *testing.T) {
	t.Parallel()
	p, err := pageOf(t, "")
	require.NoError(t, err)
	require.Equal(t, PageRequest{Limit: DefaultPageLimit}, p)

	p, err = pageOf(t, "limit=500&cursor=abc")
	require.NoError(t, err)
	require.Equal(t, PageRequest{Limit: 500, Cursor: "abc"}, p)

	for _, bad := range []string{"limit=0", "limit=501", "limit=x", "limit=-1", "cursor=" + strings.Repeat("a", 1025)} {
		_, err := pageOf(t, bad)
		require.True(t, fault.Is(err, fault.Invalid), bad)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	type key struct {
		At string `json:"at"`
		ID string `json:"id"`
	}
	in := key{At: "2026-01-02T03:04:05Z", ID: "a"}
	var out key
	ok, err := PageRequest{Cursor: EncodeCursor(in)}.Decode(&out)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, in, out)

	ok, err = PageRequest{}.Decode(&out)
	require.NoError(t, err)
	require.False(t, ok, "no cursor: first page")

	for _, bad := range []string{"!!!", EncodeCursor("a string, not an object")} {
		_, err = PageRequest{Cursor: bad}.Decode(&out)
		require.True(t, fault.Is(err, fault.Invalid), bad)
	}
}
