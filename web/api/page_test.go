package api

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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

// TestPageByResumesAfterTheCursorKey: pages follow the key order; an item
// added before the cursor or the cursor's own item removed between two
// pages neither repeats nor skips anything.
func TestPageByResumesAfterTheCursorKey(t *testing.T) {
	t.Parallel()
	page := func(items []string, query string) ([]string, string) {
		c := echo.New().NewContext(httptest.NewRequest("GET", "/x?"+query, nil), httptest.NewRecorder())
		out, next, err := pageBy(c, items, func(s string) string { return s })
		require.NoError(t, err)
		return out, next
	}
	items := []string{"d", "b", "a", "c", "e"}
	got, next := page(items, "limit=2")
	require.Equal(t, []string{"a", "b"}, got)
	// "b" (the cursor's item) is removed and "aa" added before it.
	got, next = page([]string{"d", "aa", "a", "c", "e"}, "limit=2&cursor="+next)
	require.Equal(t, []string{"c", "d"}, got)
	got, next = page(items, "limit=2&cursor="+next)
	require.Equal(t, []string{"e"}, got)
	require.Empty(t, next)

	got, next = page(nil, "")
	require.Empty(t, got)
	require.Empty(t, next)
	require.Less(t, newestFirst(time.Unix(2, 0), uuid.Nil), newestFirst(time.Unix(1, 0), uuid.Nil))
	require.Less(t, oldestFirst(time.Unix(1, 0), uuid.Nil), oldestFirst(time.Unix(2, 0), uuid.Nil))
}
