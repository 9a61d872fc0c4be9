package ui

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"
)

// Lang is a language the dashboard speaks, as a BCP 47 tag ("en", "ja").
type Lang string

// The languages, English first: it is the fallback.
const (
	English  Lang = "en"
	Japanese Lang = "ja"
)

// Langs lists every language, in the order the language menu shows them.
var Langs = []Lang{English, Japanese}

// Valid reports whether l is one of Langs.
func (l Lang) Valid() bool { return l == English || l == Japanese }

//go:embed messages/*.json
var messageFiles embed.FS

// Catalog holds every user-facing message, by key, in every language. A
// message is a fmt format whose arguments are numbered (%[1]s), so a
// translation may put them in another order.
type Catalog struct {
	msgs map[Lang]map[string]string
}

// LoadCatalog reads the embedded message files. It fails when a file is
// missing or malformed.
func LoadCatalog() (*Catalog, error) {
	c := &Catalog{msgs: map[Lang]map[string]string{}}
	for _, l := range Langs {
		b, err := messageFiles.ReadFile("messages/" + string(l) + ".json")
		if err != nil {
			return nil, fmt.Errorf("read the %s messages: %w", l, err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("parse the %s messages: %w", l, err)
		}
		// Areas keep their pages' messages in their own files,
		// messages/<area>.<lang>.json; a key may be defined once.
		more, _ := fs.Glob(messageFiles, "messages/*."+string(l)+".json")
		for _, f := range more {
			b, err := messageFiles.ReadFile(f)
			if err != nil {
				return nil, err
			}
			area := map[string]string{}
			if err := json.Unmarshal(b, &area); err != nil {
				return nil, fmt.Errorf("parse %s: %w", f, err)
			}
			for k, v := range area {
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("%s: message %q is defined twice", f, k)
				}
				m[k] = v
			}
		}
		c.msgs[l] = m
	}
	return c, nil
}

// Keys returns the keys of l's messages.
func (c *Catalog) Keys(l Lang) []string {
	out := make([]string, 0, len(c.msgs[l]))
	for k := range c.msgs[l] {
		out = append(out, k)
	}
	return out
}

// Message returns the raw message key in l, and whether it exists.
func (c *Catalog) Message(l Lang, key string) (string, bool) {
	m, ok := c.msgs[l][key]
	return m, ok
}

// T formats message key in l with args, falling back to English and then
// to the key itself, so a missing message shows up on the page rather
// than as an error (the catalog test keeps that from shipping).
func (c *Catalog) T(l Lang, key string, args ...any) string {
	m, ok := c.msgs[l][key]
	if !ok {
		if m, ok = c.msgs[English][key]; !ok {
			return key
		}
	}
	if len(args) == 0 {
		return m
	}
	m = plurals(m, args)
	if !strings.Contains(m, "%") { // a count chose the words only
		return m
	}
	return fmt.Sprintf(m, args...)
}

// pluralRE matches a plural choice, {n:one|other}: the first form when
// argument n is one, else the second. English messages use it; Japanese
// ones need none.
var pluralRE = regexp.MustCompile(`\{(\d):([^|{}]*)\|([^|{}]*)\}`)

// plurals resolves m's plural choices with args.
func plurals(m string, args []any) string {
	if !strings.Contains(m, "{") {
		return m
	}
	return pluralRE.ReplaceAllStringFunc(m, func(s string) string {
		p := pluralRE.FindStringSubmatch(s)
		if i, _ := strconv.Atoi(p[1]); i >= 1 && i <= len(args) && isOne(args[i-1]) {
			return p[2]
		}
		return p[3]
	})
}

// isOne reports whether a count, as a number or as written ("1"), is one.
func isOne(v any) bool {
	switch n := v.(type) {
	case int:
		return n == 1
	case int64:
		return n == 1
	case string:
		return n == "1"
	}
	return false
}

var matcher = language.NewMatcher([]language.Tag{language.English, language.Japanese})

// Negotiate picks the language of an Accept-Language header (English when
// it names neither).
func Negotiate(acceptLanguage string) Lang {
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(tags) == 0 {
		return English
	}
	_, i, conf := matcher.Match(tags...)
	if conf == language.No {
		return English
	}
	return Langs[i]
}

// langCookie remembers a browser's language choice, for the pages shown
// before sign-in; a signed-in member's stored choice wins over it.
const langCookie = "visor_lang"

// requestLang is the language of a request: stored (the member's choice,
// when known), else the language cookie, else Accept-Language.
func requestLang(r *http.Request, stored Lang) Lang {
	if stored.Valid() {
		return stored
	}
	if ck, err := r.Cookie(langCookie); err == nil && Lang(ck.Value).Valid() {
		return Lang(ck.Value)
	}
	return Negotiate(r.Header.Get("Accept-Language"))
}

// FormatTime writes t in UTC the way readers of l expect.
func (l Lang) FormatTime(t time.Time) string { return l.FormatTimeIn(t, time.UTC, false) }

// FormatTimeIn writes t in loc, named by its zone, the one way the
// dashboard writes times in l; seconds when the reader needs them (the
// audit log).
func (l Lang) FormatTimeIn(t time.Time, loc *time.Location, seconds bool) string {
	if t.IsZero() {
		return "—"
	}
	clock := "15:04"
	if seconds {
		clock = "15:04:05"
	}
	t = t.In(loc)
	if l == Japanese {
		return t.Format("2006年1月2日 " + clock + " MST")
	}
	return t.Format("2 Jan 2006 " + clock + " MST")
}

// FormatInt writes n with thousands separators (the same comma in both
// languages).
func (l Lang) FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatCents writes an amount in US cents as dollars: "$1,234.56" in
// English, "1,234.56 米ドル" in Japanese.
func (l Lang) FormatCents(cents int64) string {
	neg := cents < 0
	if neg {
		cents = -cents
	}
	s := l.FormatInt(cents/100) + fmt.Sprintf(".%02d", cents%100)
	if neg {
		s = "-" + s
	}
	if l == Japanese {
		return s + " 米ドル"
	}
	return "$" + s
}
