package api

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
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
// document. Type is a JSON Schema type; Enum, when set, lists the values.
type QueryParam struct {
	Name        string
	Type        string
	Description string
	Enum        []string
}

// PageParams are the query parameters of every list endpoint; append them
// to an Operation's Query.
var PageParams = []QueryParam{
	{Name: "limit", Type: "integer", Description: "Largest number of items to return, 1-500 (default 100)."},
	{Name: "cursor", Type: "string", Description: "Opaque cursor from a previous page's next_cursor."},
}

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

// EncodeCursor returns the opaque cursor for v (the sort key of the last
// item of a full page).
func EncodeCursor(v any) string {
	b, _ := json.Marshal(v) // cursor values are plain data
	return base64.RawURLEncoding.EncodeToString(b)
}
