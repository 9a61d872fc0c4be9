// Package validtext checks that text arriving at an edge can be stored:
// Postgres refuses a NUL character and invalid UTF-8 in text and jsonb
// values, so a request carrying either must be refused as the client's
// mistake before it reaches a query, not fail there as a server error.
package validtext

import (
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Errors name the problem in words a client can act on.
var (
	ErrNUL       = errors.New("contains a NUL character")
	ErrUTF8      = errors.New("is not valid UTF-8")
	ErrSurrogate = errors.New(`contains an unpaired UTF-16 surrogate escape (\uD800-\uDFFF)`)
)

// String reports whether s is storable text: nil, ErrNUL or ErrUTF8.
func String(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return ErrNUL
	}
	if !utf8.ValidString(s) {
		return ErrUTF8
	}
	return nil
}

// Storable returns s with every NUL and every invalid UTF-8 sequence
// replaced by U+FFFD, for text that must be kept even when it is malformed
// (an audit row's tool name).
func Storable(s string) string {
	if String(s) == nil {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// Values checks every name and value of a query or form; it returns the
// offending name (as sent) with the problem.
func Values(v url.Values) (name string, err error) {
	for k, vs := range v {
		if err := String(k); err != nil {
			return k, err
		}
		for _, s := range vs {
			if err := String(s); err != nil {
				return k, err
			}
		}
	}
	return "", nil
}

// JSON checks a raw JSON document: the bytes are UTF-8 without NUL, and no
// string escape decodes to NUL or to half a surrogate pair (a decoder
// would turn the former into a NUL and Postgres refuses both in jsonb).
// Malformed escapes are left for the JSON decoder to report.
func JSON(b []byte) error {
	if err := String(string(b)); err != nil {
		return err
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				return nil
			}
			switch {
			case r == 0:
				return ErrNUL
			case r >= 0xDC00 && r <= 0xDFFF:
				return ErrSurrogate
			case r >= 0xD800 && r <= 0xDBFF:
				if lo, ok := hex4(b, i+8); !ok || b[i+6] != '\\' || b[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
					return ErrSurrogate
				}
				i += 6
			}
			i += 5
		case c == '\\':
			i++ // the escaped character, which may be a quote
		}
	}
	return nil
}

// hex4 reads the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
