package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
)

// do runs one action against the session's tab, within ActionTimeout and
// the caller's context.
func (s *session) do(ctx context.Context, a computer.Action) (computer.Outcome, error) {
	actx, cancel := context.WithTimeout(s.tab, ActionTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	switch a.Kind {
	case computer.ActScreenshot:
		return s.screenshot(actx)
	case computer.ActClick:
		if err := s.inside(a.X, a.Y); err != nil {
			return computer.Outcome{}, err
		}
		opts := []chromedp.MouseOption{chromedp.ButtonType(input.MouseButtonLeft)}
		if a.Button == "right" {
			opts[0] = chromedp.ButtonType(input.MouseButtonRight)
		}
		if a.Double {
			opts = append(opts, chromedp.ClickCount(2))
		}
		_, err := chromedp.Run(actx, chromedp.MouseClickXY(float64(a.X), float64(a.Y), opts...))
		return computer.Outcome{}, err
	case computer.ActType:
		if err := computer.CheckText(a.Text); err != nil {
			return computer.Outcome{}, err
		}
		_, err := chromedp.Call(actx, input.InsertText, input.InsertTextParams{Text: a.Text})
		return computer.Outcome{}, err
	case computer.ActKey:
		return computer.Outcome{}, s.key(actx, a.Key)
	case computer.ActScroll:
		if err := s.inside(a.X, a.Y); err != nil {
			return computer.Outcome{}, err
		}
		dy := float64(100 * a.Amount)
		if a.Direction == "up" {
			dy = -dy
		}
		_, err := chromedp.Call(actx, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseWheel, X: float64(a.X), Y: float64(a.Y), DeltaY: dy})
		return computer.Outcome{}, err
	case computer.ActNavigate:
		// The worker checks again: the egress proxy is the enforcement,
		// this spares the browser a request the proxy would refuse.
		if _, err := computer.CheckURL(a.URL, s.spec.Allowed); err != nil {
			return computer.Outcome{}, err
		}
		return s.navigate(actx, a.URL)
	}
	return computer.Outcome{}, fault.New(fault.Invalid, "unknown action %q", a.Kind)
}

func (s *session) inside(x, y int) error {
	if x < 0 || y < 0 || x >= s.spec.Width || y >= s.spec.Height {
		return fault.New(fault.Invalid, "x and y must lie inside the %dx%d viewport", s.spec.Width, s.spec.Height)
	}
	return nil
}

// navigate opens u and reports the host the page ended on. A page the
// egress proxy refused is a refusal, not a failure of the session.
func (s *session) navigate(ctx context.Context, u string) (computer.Outcome, error) {
	err := s.open(ctx, u)
	if err != nil && ctx.Err() == nil {
		// A navigation already in flight when this one began (a link just
		// clicked, the page's own script) can land after it and make Chrome
		// report this one aborted, or failed with the other one's error. It
		// has landed by now, so this one is asked for once more.
		err = s.open(ctx, u)
	}
	if err != nil && ctx.Err() == nil {
		msg := err.Error()
		if i := strings.Index(msg, "net::"); i >= 0 {
			msg = msg[i:]
		}
		return computer.Outcome{}, fault.New(fault.Forbidden, "the page could not be opened (%s); only hosts on allowed_domains are reachable, over https", msg)
	}
	if err != nil {
		return computer.Outcome{}, err
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return computer.Outcome{}, err
	}
	host := ""
	if pu, err := url.Parse(loc); err == nil {
		host = pu.Hostname()
	}
	return computer.Outcome{Host: host}, nil
}

// open asks the tab for u. An error Chrome reports while the tab shows u
// anyway (another navigation raced this one, and this one won) is not one.
func (s *session) open(ctx context.Context, u string) error {
	_, err := chromedp.Run(ctx, chromedp.Navigate(u))
	if err != nil && ctx.Err() == nil {
		if loc, lerr := chromedp.Run(ctx, chromedp.Location()); lerr == nil && sameAddress(loc, u) {
			return nil
		}
	}
	return err
}

// sameAddress reports whether the tab's address a is the address b asked
// for, as Chrome writes it (an empty path is "/"; the fragment is left
// out).
func sameAddress(a, b string) bool {
	pa, errA := url.Parse(a)
	pb, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	for _, p := range []*url.URL{pa, pb} {
		p.Fragment, p.RawFragment = "", ""
		if p.Path == "" {
			p.Path, p.RawPath = "/", ""
		}
	}
	return pa.String() == pb.String()
}

var keyNames = map[string]string{
	"return": kb.Enter, "enter": kb.Enter, "tab": kb.Tab, "escape": kb.Escape, "esc": kb.Escape,
	"backspace": kb.Backspace, "delete": kb.Delete, "space": " ", "home": kb.Home, "end": kb.End,
	"pageup": kb.PageUp, "page_up": kb.PageUp, "pagedown": kb.PageDown, "page_down": kb.PageDown,
	"arrowup": kb.ArrowUp, "up": kb.ArrowUp, "arrowdown": kb.ArrowDown, "down": kb.ArrowDown,
	"arrowleft": kb.ArrowLeft, "left": kb.ArrowLeft, "arrowright": kb.ArrowRight, "right": kb.ArrowRight,
	"f1": kb.F1, "f2": kb.F2, "f3": kb.F3, "f4": kb.F4, "f5": kb.F5, "f6": kb.F6, "f7": kb.F7, "f8": kb.F8,
	"f9": kb.F9, "f10": kb.F10, "f11": kb.F11, "f12": kb.F12,
}

var modifierNames = map[string]chromedp.Modifier{
	"ctrl": chromedp.ModifierCtrl, "control": chromedp.ModifierCtrl, "alt": chromedp.ModifierAlt,
	"shift": chromedp.ModifierShift, "meta": chromedp.ModifierMeta, "cmd": chromedp.ModifierMeta, "super": chromedp.ModifierMeta,
}

var errKey = errors.New("unknown key")

// parseKey reads "Return", "a", "ctrl+shift+t", "shift+-".
func parseKey(k string) (string, []chromedp.Modifier, error) {
	if err := computer.CheckKey(k); err != nil {
		return "", nil, err
	}
	parts := strings.Split(k, "+")
	if strings.HasSuffix(k, "++") || k == "+" {
		parts = append(strings.Split(strings.TrimSuffix(k, "++"), "+"), "+")
	}
	name := parts[len(parts)-1]
	var mods []chromedp.Modifier
	for _, p := range parts[:len(parts)-1] {
		m, ok := modifierNames[strings.ToLower(p)]
		if !ok {
			return "", nil, fault.New(fault.Invalid, "unknown modifier %q (use ctrl, alt, shift or meta)", p)
		}
		mods = append(mods, m)
	}
	if v, ok := keyNames[strings.ToLower(name)]; ok {
		return v, mods, nil
	}
	if utf8.RuneCountInString(name) == 1 {
		if len(mods) > 0 {
			name = strings.ToLower(name)
		}
		return name, mods, nil
	}
	return "", nil, fault.Newf(fault.Invalid, errKey, "unknown key %q (e.g. Return, Tab, Escape, Backspace, ArrowDown, a, ctrl+a)", name)
}

func (s *session) key(ctx context.Context, k string) error {
	name, mods, err := parseKey(k)
	if err != nil {
		return err
	}
	_, err = chromedp.Run(ctx, chromedp.KeyEvent(name, chromedp.KeyModifiers(mods...)))
	return err
}

// String describes a session for logs, without anything the page holds.
func (s *session) String() string { return fmt.Sprintf("session %s", s.spec.Session) }
