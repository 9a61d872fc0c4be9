// Package computer is computer use: browser sessions that a worker runs for
// one AI employee at a time, and the durable workspaces those sessions can
// mount. It holds the rules every call is checked against (viewport, key,
// text and URL bounds, workspace paths, sizes, quotas and revisions), the
// session and workspace state, and the interfaces its storage and its
// browser driver implement; it imports no infrastructure. The container,
// Chrome DevTools and egress-proxy side lives in the browser subpackage.
package computer

import (
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// Bounds of the session tools' arguments.
const (
	MinWidth, MaxWidth   = 320, 1920
	MinHeight, MaxHeight = 240, 1200
	MaxTypeChars         = 2000
	MinScroll, MaxScroll = 1, 20
	DefaultScroll        = 3
	MaxURLBytes          = 2000
	DefaultMaxActions    = 50
	MaxKeyBytes          = 64
	// IdleTimeout ends a session no call has touched for this long.
	IdleTimeout = 10 * time.Minute
	// SessionLifetime ends any session this long after it started.
	SessionLifetime = time.Hour
)

var keyRE = regexp.MustCompile(`^[A-Za-z0-9+\-_]+$`)

// CheckViewport checks a viewport size.
func CheckViewport(w, h int64) error {
	if w < MinWidth || w > MaxWidth {
		return fault.New(fault.Invalid, "width must be %d-%d pixels", MinWidth, MaxWidth)
	}
	if h < MinHeight || h > MaxHeight {
		return fault.New(fault.Invalid, "height must be %d-%d pixels", MinHeight, MaxHeight)
	}
	return nil
}

// CheckText checks what computer_type may type: 1-2,000 characters.
func CheckText(s string) error {
	if n := utf8.RuneCountInString(s); n < 1 || n > MaxTypeChars {
		return fault.New(fault.Invalid, "text must be 1-%d characters (got %d)", MaxTypeChars, n)
	}
	return nil
}

// CheckKey checks a key or chord name: letters, digits, +, - and _.
func CheckKey(k string) error {
	if len(k) > MaxKeyBytes || !keyRE.MatchString(k) {
		return fault.New(fault.Invalid, "key must be letters, digits, +, - and _ only, at most %d bytes (e.g. Return, ctrl+s)", MaxKeyBytes)
	}
	return nil
}

// CheckScroll checks a scroll direction and amount.
func CheckScroll(direction string, amount int64) error {
	if direction != "up" && direction != "down" {
		return fault.New(fault.Invalid, `direction must be "up" or "down"`)
	}
	if amount < MinScroll || amount > MaxScroll {
		return fault.New(fault.Invalid, "amount must be %d-%d", MinScroll, MaxScroll)
	}
	return nil
}
