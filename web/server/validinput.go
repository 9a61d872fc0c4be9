package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/validtext"
)

// ChecksOwnBody exempts the route (an echo path, e.g. "/t/:tenant/mcp")
// from the body check of validInput, because its handler checks the body
// itself and answers in its own protocol. Call it before Serve.
func (s *Server) ChecksOwnBody(route string) { s.ownBody[route] = true }

// validInput refuses, with 400, a request whose path, query, headers or
// text body holds a NUL character or invalid UTF-8: such text cannot be
// stored, and would otherwise fail deep inside a query as a 500. Bodies are
// checked when they are JSON (or untyped) or a form; the body limit has
// already bounded them.
func (s *Server) validInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if err := validtext.String(r.URL.Path); err != nil {
			return refuseText("the request path", err)
		}
		if q, _ := url.ParseQuery(r.URL.RawQuery); q != nil {
			if name, err := validtext.Values(q); err != nil {
				return refuseText(fmt.Sprintf("query parameter %q", name), err)
			}
		}
		for name, vs := range r.Header {
			// Go's cookie parser drops every cookie whose value is not
			// printable ASCII, so what handlers read from Cookie is valid.
			if name == "Cookie" {
				continue
			}
			if err := validtext.String(name); err != nil {
				return refuseText("a header name", err)
			}
			for _, v := range vs {
				if err := validtext.String(v); err != nil {
					return refuseText(fmt.Sprintf("header %s", name), err)
				}
			}
		}
		if s.ownBody[c.Path()] || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		if err := checkBody(c); err != nil {
			return err
		}
		return next(c)
	}
}

// checkBody reads the body (bounded by the body limit), checks it and puts
// it back for the handler.
func checkBody(c echo.Context) error {
	r := c.Request()
	kind, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	var check func([]byte) error
	switch {
	case kind == "", kind == echo.MIMEApplicationJSON, strings.HasSuffix(kind, "+json"):
		check = validtext.JSON
	case kind == echo.MIMEApplicationForm:
		check = func(b []byte) error {
			form, _ := url.ParseQuery(string(b))
			if name, err := validtext.Values(form); err != nil {
				return refuseText(fmt.Sprintf("form field %q", name), err)
			}
			return nil
		}
	case strings.HasPrefix(kind, "text/"):
		check = func(b []byte) error { return validtext.String(string(b)) }
	default:
		return nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := check(body); err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return refuseText("the request body", err)
	}
	return nil
}

func refuseText(where string, err error) error {
	return echo.NewHTTPError(http.StatusBadRequest, where+" "+err.Error()+"; send UTF-8 text without NUL characters")
}
