// Package keyset is the one way Visor pages a list newest first: a row's
// Position (its time and id, the list's sort key), the cursor string that
// carries a Position between pages, and Cut, which trims a page read with
// one row to spare. Because a cursor is a key, not an offset, a row added
// or removed between two pages shifts nothing. Every store method that
// takes an `after` and every edge that hands out a next_cursor uses it.
package keyset

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Position is a row's place in a (time, id) order: the time it is sorted
// by (created, started, asked…) with its id breaking ties. Its JSON form
// is what cursors carry.
type Position struct {
	At time.Time `json:"t"`
	ID uuid.UUID `json:"id"`
}

// MaxCursor bounds a cursor an edge accepts; one Visor issued is far
// shorter.
const MaxCursor = 200

// Cursor returns p's opaque cursor: base64url of its JSON.
func (p Position) Cursor() string {
	b, _ := json.Marshal(p) // a time and a UUID always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// Parse reads a cursor: nil for "" (the first page), false for a cursor
// Visor did not issue (malformed, oversized, or without an id or time).
func Parse(s string) (*Position, bool) {
	if s == "" {
		return nil, true
	}
	var p Position
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(s) > MaxCursor || json.Unmarshal(raw, &p) != nil || p.ID == uuid.Nil || p.At.IsZero() {
		return nil, false
	}
	return &p, true
}

// Cut trims rows, read with limit+1, to limit and returns the cursor of
// the next page: "" when rows held no more than limit (the last page).
func Cut[T any](rows []T, limit int, pos func(T) Position) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, pos(rows[limit-1]).Cursor()
}
