package dbsources

import (
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// MaxStatement bounds the text of one query, in bytes.
const MaxStatement = 32 << 10

// firstWords are the statements a query may be: reads. Anything else
// (COPY, SET, LOAD, CALL, DO, BEGIN, …) is refused before it is sent; what
// remains is still run in a read-only transaction, which is what stops a
// write.
var firstWords = []string{"select", "with", "values", "table"}

// refusedWords are words that, outside strings, comments and quoted
// names, change the session or reach files even inside a read-only
// transaction. A column or table of one of these names must be quoted.
// (COPY and LOAD DATA are statements of their own: the first word and the
// one-statement rule refuse them.)
var refusedWords = map[string]string{
	"into":     "INTO (SELECT … INTO, INTO OUTFILE, INTO @var) is refused",
	"outfile":  "INTO OUTFILE is refused",
	"dumpfile": "INTO DUMPFILE is refused",
	"lock":     "locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE) are refused",
	"update":   "locking reads (FOR UPDATE) and writes are refused",
	"share":    "locking reads (FOR SHARE) are refused",
	// Functions that change the session or the server, or read files.
	"set_config": "set_config() changes the session and is refused", "pg_advisory_lock": "advisory locks are refused",
	"pg_advisory_xact_lock": "advisory locks are refused", "pg_try_advisory_lock": "advisory locks are refused",
	"pg_notify": "pg_notify() is refused", "pg_terminate_backend": "pg_terminate_backend() is refused",
	"pg_cancel_backend": "pg_cancel_backend() is refused", "pg_reload_conf": "pg_reload_conf() is refused",
	"lo_import": "large-object file access is refused", "lo_export": "large-object file access is refused",
	"pg_read_file": "file access is refused", "pg_read_binary_file": "file access is refused", "pg_ls_dir": "file access is refused",
	"dblink": "dblink is refused", "dblink_exec": "dblink is refused",
	"get_lock": "named locks are refused", "release_lock": "named locks are refused", "release_all_locks": "named locks are refused",
	"load_file": "file access is refused", "sys_exec": "sys_exec is refused", "sys_eval": "sys_eval is refused",
}

// CheckStatement refuses a query that is not exactly one read statement
// of the forms a read-only transaction cannot stop on its own. It reads
// the text the way the database's lexer does for comments, strings and
// quoted names, without parsing the statement; the database decides the
// rest. Errors are fault.Invalid saying what to change.
func CheckStatement(k Kind, sql string) error {
	if len(sql) > MaxStatement {
		return fault.New(fault.Invalid, "the query is longer than %d bytes", MaxStatement)
	}
	toks, err := lex(k, sql)
	if err != nil {
		return err
	}
	for i, t := range toks {
		if t == ";" && i < len(toks)-1 {
			return fault.New(fault.Invalid, "send exactly one statement (no ';' between statements)")
		}
	}
	if len(toks) == 0 || toks[0] == ";" {
		return fault.New(fault.Invalid, "the query is empty")
	}
	first := toks[0]
	for i := 0; first == "(" && i < len(toks)-1; i++ {
		first = toks[i+1] // (SELECT …) UNION (SELECT …)
	}
	if !contains(firstWords, first) {
		return fault.New(fault.Invalid, "only a read statement is run: it must start with SELECT, WITH, VALUES or TABLE, not %q", strings.ToUpper(first))
	}
	for i, t := range toks {
		if why, ok := refusedWords[t]; ok {
			if t == "update" && (i == 0 || toks[i-1] != "for") && (i == 0 || toks[i-1] != "key") {
				continue // UPDATE as DML inside a CTE is for the read-only transaction to refuse
			}
			return fault.New(fault.Invalid, "%s; quote a column or table of that name", why)
		}
		if t == ":=" {
			return fault.New(fault.Invalid, "variable assignment (:=) changes the session and is refused")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
