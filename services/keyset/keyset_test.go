package keyset_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/keyset"
)

type row struct {
	at time.Time
	id uuid.UUID
}

func pos(r row) keyset.Position { return keyset.Position{At: r.at, ID: r.id} }

// TestCutGivesACursorOnlyWhenAnotherPageExists: rows read with limit+1 are
// cut to limit, and the cursor names the last row kept; a page of limit
// rows or fewer is the last.
func TestCutGivesACursorOnlyWhenAnotherPageExists(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	rows := []row{{now, uuid.New()}, {now.Add(-time.Second), uuid.New()}, {now.Add(-2 * time.Second), uuid.New()}}
	kept, next := keyset.Cut(rows, 2, pos)
	require.Equal(t, rows[:2], kept)
	after, ok := keyset.Parse(next)
	require.True(t, ok)
	require.True(t, after.At.Equal(rows[1].at))
	require.Equal(t, rows[1].id, after.ID)

	kept, next = keyset.Cut(rows, 3, pos)
	require.Equal(t, rows, kept)
	require.Empty(t, next)
}

// TestParseRefusesCursorsVisorDidNotIssue: the first page has no cursor;
// anything that is not a whole position is refused.
func TestParseRefusesCursorsVisorDidNotIssue(t *testing.T) {
	t.Parallel()
	p, ok := keyset.Parse("")
	require.True(t, ok)
	require.Nil(t, p)
	for _, bad := range []string{"!!", "e30", "bnVsbA", strings.Repeat("A", 300),
		keyset.Position{ID: uuid.New()}.Cursor(), keyset.Position{At: time.Now()}.Cursor()} {
		_, ok := keyset.Parse(bad)
		require.False(t, ok, bad)
	}
}

// FuzzParse: no cursor panics, and one that parses encodes back to a
// cursor that parses to the same position.
func FuzzParse(f *testing.F) {
	f.Add(keyset.Position{At: time.Unix(1, 2).UTC(), ID: uuid.New()}.Cursor())
	f.Add("eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpZCI6IjAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMSJ9")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := keyset.Parse(s)
		if !ok || p == nil {
			return
		}
		again, ok := keyset.Parse(p.Cursor())
		if !ok || !again.At.Equal(p.At) || again.ID != p.ID {
			t.Fatalf("%q does not round-trip", s)
		}
	})
}
