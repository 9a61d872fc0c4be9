package dbsources

import (
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// lex returns the words (lower-cased), ':=' and other punctuation of sql,
// one character each, skipping
// comments, string literals and quoted names as k's lexer does: -- and
// /* */ comments (nested in Postgres; # too in MySQL), '…' strings
// (backslash escapes in MySQL, E'…' in Postgres), $tag$…$tag$ in
// Postgres, "…" names in Postgres and strings in MySQL, `…` names in MySQL.
// An unterminated comment, string or name is an error: the database would
// read the rest differently.
func lex(k Kind, sql string) ([]string, error) {
	var toks []string
	unterminated := fault.New(fault.Invalid, "the query has an unterminated string, quoted name or comment")
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '-' && strings.HasPrefix(sql[i:], "--"), c == '#' && k == MySQL:
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return toks, nil
			}
			i += j + 1
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if k == MySQL && strings.HasPrefix(sql[i:], "/*!") {
				return nil, fault.New(fault.Invalid, "MySQL executable comments (/*! … */) are refused")
			}
			j := skipBlockComment(sql, i, k == Postgres)
			if j < 0 {
				return nil, unterminated
			}
			i = j
		case c == '\'' || (c == '"' && k == MySQL):
			escapes := k == MySQL || (i > 0 && (sql[i-1] == 'e' || sql[i-1] == 'E') && (i < 2 || !isWord(sql[i-2])))
			j := skipQuoted(sql, i, c, escapes)
			if j < 0 {
				return nil, unterminated
			}
			i = j
		case c == '"' || (c == '`' && k == MySQL):
			j := skipQuoted(sql, i, c, false)
			if j < 0 {
				return nil, unterminated
			}
			i = j
		case c == '$' && k == Postgres && (i == 0 || !isWord(sql[i-1])):
			tag, ok := dollarTag(sql[i:])
			if !ok {
				i++
				continue
			}
			j := strings.Index(sql[i+len(tag):], tag)
			if j < 0 {
				return nil, unterminated
			}
			i += 2*len(tag) + j
		case c == ';':
			toks = append(toks, ";")
			i++
		case c == ':' && strings.HasPrefix(sql[i:], ":="):
			toks = append(toks, ":=")
			i += 2
		case isWord(c):
			j := i
			for j < len(sql) && isWord(sql[j]) {
				j++
			}
			toks = append(toks, strings.ToLower(sql[i:j]))
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		default: // punctuation: kept, so text after a ';' is seen
			toks = append(toks, sql[i:i+1])
			i++
		}
	}
	return toks, nil
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// skipQuoted returns the index after the quote closing the one at i; a
// doubled quote is part of the text, and with escapes so is \x.
func skipQuoted(s string, i int, q byte, escapes bool) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case escapes && s[j] == '\\':
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return -1
}

func skipBlockComment(s string, i int, nested bool) int {
	depth := 0
	for j := i; j < len(s)-1; j++ {
		switch {
		case s[j] == '/' && s[j+1] == '*' && (nested || depth == 0):
			depth++
			j++
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}

// dollarTag returns the $tag$ opening s, if s opens a dollar-quoted string.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		switch {
		case s[j] == '$':
			return s[:j+1], true
		case !(s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || (j > 1 && s[j] >= '0' && s[j] <= '9') || s[j] >= 0x80):
			return "", false
		}
	}
	return "", false
}
