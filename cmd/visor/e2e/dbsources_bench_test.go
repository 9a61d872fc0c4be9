package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the direct MariaDB side of the comparison
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
)

const benchQuery = "SELECT id, owner, balance, opened FROM accounts WHERE id = 1"

// dbSourceReplica starts one replica that may reach loopback databases,
// and registers db as source name for ada.
func dbSourceReplica(b *testing.B, sources map[string]*dbtest.DB, maxBytes int) (*world, *replica) {
	key, err := secrets.NewKey("bench")
	require.NoError(b, err)
	w := newWorld(b)
	r := startReplica(b, "A", w.dbURL, privateRedis(b).URL(), "VISOR_LOG_LEVEL=error", "VISOR_SECRET_KEYS="+key,
		"VISOR_DB_ALLOWED_NETWORKS=127.0.0.0/8")
	var names []string
	for name, db := range sources {
		w.api(b, r, http.MethodPost, "/tenants/acme/db-sources", map[string]any{"name": name,
			"connection_string": db.URL(db.Reader), "max_bytes": maxBytes}, nil)
		names = append(names, name)
	}
	w.api(b, r, http.MethodPut, "/tenants/acme/agents/ada/settings",
		map[string]any{"settings": identity.AgentSettings{Capabilities: identity.Capabilities{DBSources: names}}}, nil)
	return w, r
}

// BenchmarkDBQuery times one small query (one row of four columns) 500
// times through Visor — an AI employee's db_query over MCP: HTTP, the key,
// the policy, the statement rules, the read-only transaction with its
// timeout, the fence and scan, the durable audit row — alternating with the
// same query sent straight to the database from a warm pool, in the same
// run. b.N is ignored (run with -benchtime 1x).
//
//	go test ./cmd/visor/e2e -run '^$' -bench DBQuery -benchtime 1x
func BenchmarkDBQuery(b *testing.B) {
	pgdb, mydb := dbtest.NewPostgres(b), dbtest.NewMariaDB(b)
	w, r := dbSourceReplica(b, map[string]*dbtest.DB{"pg": pgdb, "maria": mydb}, 0)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgdb.URL(pgdb.Reader))
	require.NoError(b, err)
	defer pool.Close()
	my, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s:%d)/%s", mydb.Reader.User, mydb.Reader.Password, mydb.Host, mydb.Port, mydb.Database))
	require.NoError(b, err)
	defer my.Close()
	direct := map[string]func() error{
		"pg": func() error {
			rows, err := pool.Query(ctx, benchQuery)
			if err != nil {
				return err
			}
			_, err = rowsValues(rows.Values, rows.Next, rows.Err, rows.Close)
			return err
		},
		"maria": func() error {
			rows, err := my.QueryContext(ctx, benchQuery)
			if err != nil {
				return err
			}
			defer rows.Close()
			var id int
			var owner, balance, opened sql.NullString
			for rows.Next() {
				if err := rows.Scan(&id, &owner, &balance, &opened); err != nil {
					return err
				}
			}
			return rows.Err()
		},
	}
	for _, name := range []string{"pg", "maria"} {
		b.Run(name, func(b *testing.B) {
			const n = 500
			var visor, straight []time.Duration
			for i := range n + 20 {
				start := time.Now()
				callTool(b, r, w.adaKey, "db_query", map[string]any{"source": name, "sql": benchQuery})
				v := time.Since(start)
				start = time.Now()
				require.NoError(b, direct[name]())
				d := time.Since(start)
				if i >= 20 { // warm-up
					visor, straight = append(visor, v), append(straight, d)
				}
			}
			v50, v99, _ := percentiles(visor)
			d50, d99, _ := percentiles(straight)
			b.ReportMetric(ms(v50), "visor-p50-ms")
			b.ReportMetric(ms(v99), "visor-p99-ms")
			b.ReportMetric(ms(d50), "direct-p50-ms")
			b.ReportMetric(ms(d99), "direct-p99-ms")
			b.Logf("%s, %d queries: through Visor p50 %.2f ms p99 %.2f ms; direct p50 %.2f ms p99 %.2f ms", name, n, ms(v50), ms(v99), ms(d50), ms(d99))
		})
	}
}

func rowsValues(values func() ([]any, error), next func() bool, errf func() error, closef func()) (int, error) {
	defer closef()
	n := 0
	for next() {
		if _, err := values(); err != nil {
			return n, err
		}
		n++
	}
	return n, errf()
}

// BenchmarkDBDescribe times db_describe over MCP on a Postgres schema of
// 1,000 tables of six columns each (the source's byte cap raised to 4 MiB
// so every table fits), 30 times. b.N is ignored (run with -benchtime 1x).
//
//	go test ./cmd/visor/e2e -run '^$' -bench DBDescribe -benchtime 1x
func BenchmarkDBDescribe(b *testing.B) {
	pgdb := dbtest.NewPostgres(b)
	var ddl []string
	for i := range 1000 {
		ddl = append(ddl, fmt.Sprintf("CREATE TABLE t%04d (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2), at timestamptz, note varchar(200), flag boolean)", i))
	}
	pgdb.Exec(b, strings.Join(ddl, ";\n"), "GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+pgdb.Reader.User)
	w, r := dbSourceReplica(b, map[string]*dbtest.DB{"wide": pgdb}, 4<<20)
	var times []time.Duration
	var tables, size int
	for i := range 33 {
		start := time.Now()
		out := callTool(b, r, w.adaKey, "db_describe", map[string]any{"source": "wide"})
		d := time.Since(start)
		var sc struct {
			Tables    []json.RawMessage `json:"tables"`
			Truncated bool              `json:"truncated"`
		}
		require.NoError(b, json.Unmarshal(out.Structured, &sc))
		require.False(b, sc.Truncated)
		tables, size = len(sc.Tables), len(out.Content[0].Text)
		if i >= 3 {
			times = append(times, d)
		}
	}
	p50, p99, pmax := percentiles(times)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.Logf("db_describe of %d tables (%d bytes of fenced text), %d calls: p50 %.1f ms, p99 %.1f ms, max %.1f ms", tables, size, len(times), ms(p50), ms(p99), ms(pmax))
}
