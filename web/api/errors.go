package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/validtext"
)

// codeOfStatus names echo's own errors (unknown route, wrong method, body
// too large) with the fault code of the same meaning.
func codeOfStatus(status int) fault.Code {
	switch status {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fault.NotFound
	case http.StatusRequestEntityTooLarge:
		return fault.TooLarge
	case http.StatusUnauthorized:
		return fault.Unauthorized
	case http.StatusForbidden:
		return fault.Forbidden
	case http.StatusTooManyRequests:
		return fault.RateLimited
	case http.StatusServiceUnavailable:
		return fault.Unavailable
	}
	if status >= 400 && status < 500 {
		return fault.Invalid
	}
	return fault.Internal
}

// ErrorBody is the JSON shape of every error.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail names what went wrong: a fault code and a message safe to
// show the caller.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorHandler renders any error a handler returns: fault codes through
// Status, echo's own errors by their status, and anything else as a 500
// whose detail is never sent. The detail is logged once, by web/server's
// request log line (at error level for a 5xx). Install it as the echo
// instance's HTTPErrorHandler.
func ErrorHandler(_ *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var status int
		var body ErrorBody
		var he *echo.HTTPError
		switch {
		case errors.As(err, &he):
			status = he.Code
			msg := http.StatusText(he.Code)
			if m, ok := he.Message.(string); ok && he.Code < 500 {
				msg = m
			}
			body.Error = ErrorDetail{Code: string(codeOfStatus(he.Code)), Message: msg}
		default:
			code := fault.CodeOf(err)
			status = fault.HTTPStatus(code)
			body.Error = ErrorDetail{Code: string(code), Message: fault.Message(err)}
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, body)
	}
}

// decode reads the JSON body into v. Text Postgres cannot store (invalid
// UTF-8, NUL), unknown fields, trailing data and wrong types are fault.Invalid with a message naming the problem; an
// oversized body is fault.TooLarge.
func decode(c echo.Context, v any) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return badJSON(err)
	}
	if err := validtext.JSON(raw); err != nil {
		return fault.New(fault.Invalid, "the request body %s; send UTF-8 text without NUL characters", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Invalid, "the request body must be one JSON object")
	}
	return nil
}

func badJSON(err error) error {
	var he *echo.HTTPError
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge:
		return fault.New(fault.TooLarge, "the request body is too large")
	case errors.Is(err, io.EOF):
		return fault.New(fault.Invalid, "the request body is empty; send a JSON object")
	case errors.As(err, &te):
		return fault.New(fault.Invalid, "field %q must be %s", te.Field, jsonKind(te.Type.Kind().String()))
	case errors.As(err, &se):
		return fault.New(fault.Invalid, "the request body is not valid JSON (at byte %d)", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fault.New(fault.Invalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fault.New(fault.Invalid, "the request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "true or false"
	case k == "slice", k == "array":
		return "an array"
	case k == "struct", k == "map", k == "ptr":
		return "an object"
	}
	return fmt.Sprintf("a %s", k)
}
