package dbsources

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
)

// Bounds of a source's limits, and their defaults.
var (
	DefaultLimits = Limits{StatementTimeout: 10 * time.Second, MaxRows: 500, MaxBytes: 256 << 10, MaxConcurrent: 2}
	maxLimits     = Limits{StatementTimeout: 300 * time.Second, MaxRows: 10000, MaxBytes: 4 << 20, MaxConcurrent: 32}
	minLimits     = Limits{StatementTimeout: 100 * time.Millisecond, MaxRows: 1, MaxBytes: 1 << 10, MaxConcurrent: 1}
)

// MaxAllowList bounds each allow list; maxSources bounds a tenant's sources.
const (
	MaxAllowList = 256
	maxSources   = 100
)

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	identRE = regexp.MustCompile(`^[A-Za-z0-9_$-]{1,63}(\.[A-Za-z0-9_$-]{1,63})?$`)
)

// ValidName reports whether name may name a source: 1-63 lower-case
// letters, digits, '-' or '_', starting with a letter.
func ValidName(name string) bool { return nameRE.MatchString(name) }

var sslModes = []string{"disable", "prefer", "require", "verify-full"}

// ParseURL reads a connection string, postgres://user:password@host:5432/db
// or mysql://user:password@host:3306/db, with an optional sslmode
// parameter and nothing else. It returns the driver, the endpoint and the
// password. Errors never echo the string (it may hold the password).
func ParseURL(raw string) (Kind, Endpoint, string, error) {
	bad := func(why string) (Kind, Endpoint, string, error) {
		return "", Endpoint{}, "", fault.New(fault.Invalid, "connection string: %s; want postgres://user:password@host:5432/db or mysql://user:password@host:3306/db", why)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || len(raw) > 2000 {
		return bad("not a URL of at most 2000 bytes")
	}
	var kind Kind
	port := 0
	switch u.Scheme {
	case "postgres", "postgresql":
		kind, port = Postgres, 5432
	case "mysql", "mariadb":
		kind, port = MySQL, 3306
	default:
		return bad("the scheme must be postgres or mysql")
	}
	e := Endpoint{Host: strings.ToLower(u.Hostname()), Database: strings.TrimPrefix(u.Path, "/"), SSLMode: "prefer"}
	if e.Host == "" || strings.ContainsAny(e.Host, ",/ %") {
		return bad("it needs one host name or address (no socket paths, no host lists)")
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return bad("the port must be 1-65535")
		}
	}
	e.Port = port
	if e.Database == "" || strings.Contains(e.Database, "/") || len(e.Database) > 63 {
		return bad("it needs a database name")
	}
	if u.User == nil || u.User.Username() == "" || len(u.User.Username()) > 63 {
		return bad("it needs a user name (a read-only role)")
	}
	e.User = u.User.Username()
	password, _ := u.User.Password()
	for k, v := range u.Query() {
		if k != "sslmode" || len(v) != 1 || !slices.Contains(sslModes, v[0]) {
			return bad("the only parameter accepted is sslmode=" + strings.Join(sslModes, "|"))
		}
		e.SSLMode = v[0]
	}
	if u.Fragment != "" || u.Opaque != "" {
		return bad("no fragment")
	}
	return kind, e, password, nil
}

// String is the endpoint as a connection string without a password.
func (e Endpoint) String(k Kind) string {
	u := url.URL{Scheme: string(k), User: url.User(e.User), Host: e.Host + ":" + strconv.Itoa(e.Port), Path: "/" + e.Database,
		RawQuery: "sslmode=" + e.SSLMode}
	return u.String()
}

// Check validates limits, filling zero fields with the defaults.
func (l *Limits) Check() error {
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if l.StatementTimeout == 0 {
		l.StatementTimeout = DefaultLimits.StatementTimeout
	}
	fill(&l.MaxRows, DefaultLimits.MaxRows)
	fill(&l.MaxBytes, DefaultLimits.MaxBytes)
	fill(&l.MaxConcurrent, DefaultLimits.MaxConcurrent)
	switch {
	case l.StatementTimeout < minLimits.StatementTimeout || l.StatementTimeout > maxLimits.StatementTimeout:
		return fault.New(fault.Invalid, "statement_timeout_ms must be %d-%d", minLimits.StatementTimeout.Milliseconds(), maxLimits.StatementTimeout.Milliseconds())
	case l.MaxRows < minLimits.MaxRows || l.MaxRows > maxLimits.MaxRows:
		return fault.New(fault.Invalid, "max_rows must be %d-%d", minLimits.MaxRows, maxLimits.MaxRows)
	case l.MaxBytes < minLimits.MaxBytes || l.MaxBytes > maxLimits.MaxBytes:
		return fault.New(fault.Invalid, "max_bytes must be %d-%d", minLimits.MaxBytes, maxLimits.MaxBytes)
	case l.MaxConcurrent < minLimits.MaxConcurrent || l.MaxConcurrent > maxLimits.MaxConcurrent:
		return fault.New(fault.Invalid, "max_concurrent must be %d-%d", minLimits.MaxConcurrent, maxLimits.MaxConcurrent)
	}
	return nil
}

// checkAllowList validates an allow list: schema names, or schema.table
// names for tables.
func checkAllowList(field string, list []string, qualified bool) error {
	if len(list) > MaxAllowList {
		return fault.New(fault.Invalid, "%s holds at most %d names", field, MaxAllowList)
	}
	for _, n := range list {
		if !identRE.MatchString(n) || qualified != strings.Contains(n, ".") {
			want := "a schema name"
			if qualified {
				want = "schema.table"
			}
			return fault.New(fault.Invalid, "%s: %q must be %s (letters, digits, '_', '$', '-')", field, n, want)
		}
	}
	return nil
}

// Allows reports whether scope lets a caller see table t of schema s.
func (sc Scope) Allows(schema, table string) bool {
	if len(sc.Schemas) > 0 && !slices.Contains(sc.Schemas, schema) {
		return false
	}
	return len(sc.Tables) == 0 || slices.Contains(sc.Tables, schema+"."+table)
}
