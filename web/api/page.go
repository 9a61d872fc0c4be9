package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/keyset"
)

// Paging: every list endpoint takes `limit` and `cursor` and answers with
// its plural field plus `next_cursor`, absent on the last page. A cursor is
// opaque to callers: base64url of a small JSON value the endpoint chooses
// (usually the sort key of the last row it returned, for keyset paging).

// Page limits.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 500
	maxCursorBytes   = 1024
)

// QueryParam is one query parameter an operation accepts, for the OpenAPI
// document. Type is a JSON Schema type; Enum, when set, lists the values;
// Format (uuid, date-time), Min and Max (integers) and Default refine it.
type QueryParam struct {
	Name        string
	Type        string
	Description string
	Enum        []string
	Format      string
	Min, Max    int
	Default     any
}

func (q QueryParam) schema() map[string]any {
	s := map[string]any{"type": q.Type}
	if len(q.Enum) > 0 {
		s["enum"] = q.Enum
	}
	if q.Format != "" {
		s["format"] = q.Format
	}
	if q.Min != 0 || q.Max != 0 {
		s["minimum"], s["maximum"] = q.Min, q.Max
	}
	if q.Default != nil {
		s["default"] = q.Default
	}
	return s
}

// PageParams are the query parameters of every list endpoint; append them
// to an Operation's Query (Paged does).
var PageParams = []QueryParam{
	{Name: "limit", Type: "integer", Min: 1, Max: MaxPageLimit, Default: DefaultPageLimit, Description: "Largest number of items to return, 1-500 (default 100)."},
	{Name: "cursor", Type: "string", Description: "Opaque cursor from a previous page's next_cursor; absent for the first page."},
}

// Paged returns filters followed by PageParams, for a list Operation's Query.
func Paged(filters ...QueryParam) []QueryParam { return append(filters, PageParams...) }

// PageRequest is a list request's paging: Limit items after the position
// Cursor encodes (empty for the first page).
type PageRequest struct {
	Limit  int
	Cursor string
}

// ReadPage reads limit and cursor from the query. A bad limit or an
// oversized cursor is fault.Invalid.
func ReadPage(c echo.Context) (PageRequest, error) {
	p := PageRequest{Limit: DefaultPageLimit, Cursor: c.QueryParam("cursor")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageLimit {
			return p, fault.New(fault.Invalid, "limit must be an integer from 1 to %d", MaxPageLimit)
		}
		p.Limit = n
	}
	if len(p.Cursor) > maxCursorBytes {
		return p, fault.New(fault.Invalid, "cursor is not one this API issued")
	}
	return p, nil
}

// Decode reads the request's cursor into v; it reports false for the first
// page. A cursor this API did not issue is fault.Invalid.
func (p PageRequest) Decode(v any) (bool, error) {
	if p.Cursor == "" {
		return false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
	if err != nil || json.Unmarshal(raw, v) != nil {
		return false, fault.New(fault.Invalid, "cursor is not one this API issued")
	}
	return true, nil
}

// After reads the request's cursor as a keyset position: nil for the first
// page; a cursor this API did not issue is fault.Invalid.
func (p PageRequest) After() (*keyset.Position, error) {
	pos, ok := keyset.Parse(p.Cursor)
	if !ok {
		return nil, fault.New(fault.Invalid, "cursor is not one this API issued")
	}
	return pos, nil
}

// cut trims rows read with limit+1 to limit (keyset.Cut) and returns the
// next page's cursor; the list is never null.
func cut[T any](rows []T, limit int, pos func(T) keyset.Position) ([]T, string) {
	rows, next := keyset.Cut(rows, limit, pos)
	return nonNil(rows), next
}

// EncodeCursor returns the opaque cursor for v (the sort key of the last
// item of a full page).
func EncodeCursor(v any) string {
	b, _ := json.Marshal(v) // cursor values are plain data
	return base64.RawURLEncoding.EncodeToString(b)
}

// pageBy pages a whole list the store returned: it orders items by key
// (unique per item; ascending), starts after the key the cursor holds, and
// returns at most the request's limit of them with the cursor of the next
// page ("" on the last). Because the cursor is a key, not an offset, an
// item added or removed between two pages shifts nothing.
func pageBy[T any](c echo.Context, items []T, key func(T) string) ([]T, string, error) {
	p, err := ReadPage(c)
	if err != nil {
		return nil, "", err
	}
	var after string
	resume, err := p.Decode(&after)
	if err != nil {
		return nil, "", err
	}
	slices.SortStableFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	if resume {
		i, found := slices.BinarySearchFunc(items, after, func(x T, k string) int { return strings.Compare(key(x), k) })
		if found {
			i++
		}
		items = items[i:]
	}
	if len(items) <= p.Limit {
		return items, "", nil
	}
	items = items[:p.Limit]
	return items, EncodeCursor(key(items[len(items)-1])), nil
}

// oldestFirst and newestFirst are page keys ordering by a time, ties
// broken by id.
func oldestFirst(t time.Time, id uuid.UUID) string {
	return fmt.Sprintf("%019d/%s", t.UnixNano(), id)
}

func newestFirst(t time.Time, id uuid.UUID) string {
	return fmt.Sprintf("%019d/%s", math.MaxInt64-t.UnixNano(), id)
}
